//! Streaming, tolerant reading of `events.jsonl`.
//!
//! The file is read in large blocks that always end on a newline, so memory stays bounded by the
//! block size however large the log is. Each line is classified as an event, blank, or
//! unreadable (corrupt JSON or not UTF-8), with its 1-based line number. A last line with no
//! newline may still be being written: it is left pending, never reported as corrupt.
//!
//! The work is a pipeline over blocks: one thread reads, a pool of threads (one per core)
//! checks each block's lines and marks the values a fold keeps ([`Fact::mark`]), and the
//! calling thread folds each block's facts in file order as soon as that block is ready, so
//! reading, decoding and folding overlap. Blocks go to the decoders in turn and come back in
//! the same turn, so the order needs no sorting; their buffers go back to the reader. A log no
//! longer than a block is read, marked and folded on the calling thread alone: starting the
//! pipeline would cost more than the work.

use super::fact::{Fact, KeptValues};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::mpsc;

/// Bytes read per block. Large enough to amortise a hand-off between threads, small enough
/// that the blocks in flight (a few per decoding thread) keep a 1 GB scan's resident set in
/// single-digit megabytes.
const BLOCK: usize = 1 << 20;

/// The longest line a reader holds: far past any event harrow writes (a reply is cut at
/// `max_reply_bytes`, 16 MB by default), short enough that a planted endless line in a shared
/// folder costs no more than this. A longer line is skipped as unreadable, never held whole.
pub const MAX_LINE: usize = 32 << 20;

/// What an overlong line becomes in its block: one unreadable line, at the line's offset.
const OVERLONG: &[u8] = b"!\n";

/// Decoding threads at most: past this the one thread that folds is the bound.
const MAX_DECODERS: usize = 8;

/// How many unreadable line numbers are remembered; the count keeps going past it.
const UNREADABLE_KEPT: usize = 1000;

/// Where one line sits in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineAt {
    /// 1-based line number in the file.
    pub number: u64,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// Length in bytes, without the newline.
    pub len: u32,
}

/// What a scan found besides events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// Complete lines seen (events, blank and unreadable).
    pub lines: u64,
    pub events: u64,
    pub blank: u64,
    /// Line numbers of unreadable lines, the first [`UNREADABLE_KEPT`] of them.
    pub unreadable: Vec<u64>,
    pub unreadable_count: u64,
    /// Offset just past the last complete line: where a tail should resume.
    pub end_offset: u64,
    /// Bytes after the last newline: a line still being written, or a torn tail.
    pub pending_bytes: u64,
}

impl ScanReport {
    /// Counts line number `line` as unreadable.
    pub fn note_unreadable(&mut self, line: u64) {
        self.unreadable_count += 1;
        if self.unreadable.len() < UNREADABLE_KEPT {
            self.unreadable.push(line);
        }
    }

    /// Adds what a scan of the lines after these found: the counts add up, the line numbers
    /// kept stay the first [`UNREADABLE_KEPT`], and where a tail resumes is where `later` ended.
    pub fn extend(&mut self, later: ScanReport) {
        self.lines += later.lines;
        self.events += later.events;
        self.blank += later.blank;
        self.unreadable_count += later.unreadable_count;
        let room = UNREADABLE_KEPT.saturating_sub(self.unreadable.len());
        self.unreadable.extend(later.unreadable.into_iter().take(room));
        self.end_offset = self.end_offset.max(later.end_offset);
        self.pending_bytes = later.pending_bytes;
    }

    /// "3 unreadable lines (12, 40, 41)" or `None` when every line was readable.
    pub fn unreadable_sentence(&self) -> Option<String> {
        if self.unreadable_count == 0 {
            return None;
        }
        let shown: Vec<String> = self.unreadable.iter().take(10).map(u64::to_string).collect();
        let more = if self.unreadable_count > shown.len() as u64 { ", …" } else { "" };
        let noun = if self.unreadable_count == 1 { "line" } else { "lines" };
        Some(format!("{} unreadable {noun} ({}{more})", self.unreadable_count, shown.join(", ")))
    }
}

/// A run of complete lines read from the file.
struct Block {
    /// The buffer, which may be longer than what was read into it: it is kept at its size from
    /// block to block, so it is zeroed once, not for every read.
    buffer: Vec<u8>,
    len: usize,
    offset: u64,
}

impl Block {
    /// The lines, each with its newline.
    fn data(&self) -> &[u8] {
        &self.buffer[..self.len]
    }
}

/// Reads a file from an offset in blocks that end on a newline, up to a limit. Lines are
/// numbered by the fold, which sees every block in order: the reader only finds where its
/// last line ends.
struct BlockReader {
    file: io::Take<File>,
    /// The file's length when it was opened: what a block is sized by (a log that grows
    /// meanwhile is still read to its end, its buffer growing).
    length_then: u64,
    carry: Vec<u8>,
    offset: u64,
    eof: bool,
    /// Bytes of an overlong last line skipped at the end of the file: still pending.
    skipped_tail: u64,
}

impl BlockReader {
    /// Reads from `offset`, the start of a line, up to byte `until`.
    fn open(path: &Path, offset: u64, until: u64) -> io::Result<BlockReader> {
        let mut file = crate::safe_io::open_regular(path)?;
        let length_then = file.metadata()?.len();
        file.seek(SeekFrom::Start(offset))?;
        let file = file.take(until.saturating_sub(offset));
        Ok(BlockReader {
            file,
            length_then,
            carry: Vec::new(),
            offset,
            eof: false,
            skipped_tail: 0,
        })
    }

    /// The next run of complete lines, read into `spare` (a block's buffer that was folded)
    /// when there is one.
    fn next_block(&mut self, spare: Option<Vec<u8>>) -> io::Result<Option<Block>> {
        let mut buffer = spare.unwrap_or_default();
        let carried = self.carry.len();
        // No larger than what is left to read (and a byte to see its end): a small log is not
        // given a whole block of zeroed pages, each a page fault, at every read of it.
        let left = usize::try_from(self.left()).unwrap_or(usize::MAX);
        let want = carried + BLOCK.min(left.saturating_add(1));
        if buffer.len() < want {
            buffer.resize(want, 0);
        }
        buffer[..carried].copy_from_slice(&self.carry);
        let mut filled = carried;
        loop {
            if self.eof {
                // What was read after the last newline: a line still being written.
                self.carry.clear();
                self.carry.extend_from_slice(&buffer[..filled]);
                return Ok(None);
            }
            if filled == buffer.len() {
                // A line longer than a block: the buffer grows until it holds it.
                buffer.resize(filled + BLOCK, 0);
            }
            let n = read_full(&mut self.file, &mut buffer[filled..])?;
            if n == 0 {
                self.eof = true;
            }
            let read = &buffer[filled..filled + n];
            let last_nl = memchr::memrchr(b'\n', read).map(|i| filled + i);
            filled += n;
            if last_nl.is_none() && filled > MAX_LINE {
                // Everything here is one line (blocks end at a newline): skip it.
                return self.skip_overlong(buffer, filled as u64);
            }
            if let Some(last_nl) = last_nl {
                self.carry.clear();
                self.carry.extend_from_slice(&buffer[last_nl + 1..filled]);
                let len = last_nl + 1;
                let block = Block { buffer, len, offset: self.offset };
                self.offset += len as u64;
                return Ok(Some(block));
            }
        }
    }

    fn pending(&self) -> u64 {
        self.carry.len() as u64 + self.skipped_tail
    }

    /// What is left to read: the nearer of the limit and the file's end as it was when opened.
    fn left(&self) -> u64 {
        let read_to = self.offset + self.carry.len() as u64;
        self.file.limit().min(self.length_then.saturating_sub(read_to))
    }

    /// Reads past the rest of a line longer than [`MAX_LINE`] (`held` bytes of it read so
    /// far) and gives it as a block of one unreadable line at its offset; the bytes after its
    /// newline are carried. A line that never ends is left pending, unread.
    fn skip_overlong(&mut self, mut buffer: Vec<u8>, held: u64) -> io::Result<Option<Block>> {
        let mut skipped = held;
        buffer.resize(BLOCK, 0);
        loop {
            let n = read_full(&mut self.file, &mut buffer)?;
            if n == 0 {
                self.eof = true;
                self.carry.clear();
                self.skipped_tail = skipped;
                return Ok(None);
            }
            if let Some(nl) = memchr::memchr(b'\n', &buffer[..n]) {
                self.carry.clear();
                self.carry.extend_from_slice(&buffer[nl + 1..n]);
                skipped += nl as u64 + 1;
                buffer[..OVERLONG.len()].copy_from_slice(OVERLONG);
                let block = Block { buffer, len: OVERLONG.len(), offset: self.offset };
                self.offset += skipped;
                return Ok(Some(block));
            }
            skipped += n as u64;
        }
    }
}

fn read_full(file: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// What one line of a block is.
#[derive(Debug, Clone, Copy)]
enum LineKind {
    /// An event, whose marks are this range of the block's marks.
    Event {
        marks: (u32, u32),
    },
    Blank,
    Unreadable,
}

/// A block with every line checked and marked, ready to fold. Each line's number counts from
/// the block's first line (0); the fold adds where the block starts.
struct Marked {
    block: Block,
    lines: Vec<(LineAt, LineKind)>,
    kept: KeptValues,
}

/// What a block needs to be read and marked into: a folded block's buffer and vectors again
/// when there is one (allocating them afresh costs a page fault per page), else new ones.
type Reused = (Option<Vec<u8>>, Vec<(LineAt, LineKind)>, KeptValues);

impl Marked {
    fn reused(spare: Option<Marked>) -> Reused {
        spare.map_or((None, Vec::new(), KeptValues::default()), |m| {
            (Some(m.block.buffer), m.lines, m.kept)
        })
    }
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// Checks and marks each line of a block, into the vectors of a block already folded: the
/// part of decoding that runs on any thread.
fn mark_block(block: Block, mut lines: Vec<(LineAt, LineKind)>, mut kept: KeptValues) -> Marked {
    lines.clear();
    kept.clear();
    let mut start = 0usize;
    for (number, nl) in (0..).zip(memchr::memchr_iter(b'\n', block.data())) {
        let raw = &block.data()[start..nl];
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        let at = LineAt { number, offset: block.offset + start as u64, len: line.len() as u32 };
        let kind = if is_blank(line) {
            LineKind::Blank
        } else {
            let (first, text) = (kept.marks.len(), kept.gathered_len());
            if Fact::mark(line, &mut kept).is_ok() {
                LineKind::Event { marks: (first as u32, kept.marks.len() as u32) }
            } else {
                kept.truncate(first, text);
                LineKind::Unreadable
            }
        };
        lines.push((at, kind));
        start = nl + 1;
    }
    kept.settle();
    Marked { block, lines, kept }
}

/// Folds a marked block's lines in order, numbering them from `first_line`.
/// Folds a decoded block's lines into `f`, in order, until `f` asks to stop: then the offset
/// just past the line it stopped at.
fn fold_block<F: FnMut(LineAt, &[u8], &Fact<'_>) -> ControlFlow<()>>(
    m: &Marked,
    first_line: u64,
    report: &mut ScanReport,
    f: &mut F,
) -> ControlFlow<u64> {
    // One fact for the block's lines: each line fills its few fields and empties them after.
    let mut fact = Fact::default();
    for &(at, kind) in &m.lines {
        let at = LineAt { number: first_line + at.number, ..at };
        report.lines += 1;
        match kind {
            LineKind::Event { marks: (from, to) } => {
                report.events += 1;
                let start = (at.offset - m.block.offset) as usize;
                let line = &m.block.data()[start..start + at.len as usize];
                let marks = &m.kept.marks[from as usize..to as usize];
                fact.fill(line, m.kept.text(), marks);
                let went_on = f(at, line, &fact);
                fact.empty(marks);
                if went_on.is_break() {
                    // Past its newline, and the carriage return before it a CRLF line has.
                    let end = start + at.len as usize;
                    let cr = m.block.data().get(end) == Some(&b'\r');
                    return ControlFlow::Break(at.offset + u64::from(at.len) + 1 + u64::from(cr));
                }
            }
            LineKind::Blank => report.blank += 1,
            LineKind::Unreadable => report.note_unreadable(at.number),
        }
    }
    ControlFlow::Continue(())
}

/// Calls `f` with every event of the file in order, starting at `offset` (whose line number is
/// `first_line`), and reports what else was found. Reads on one thread and decodes on one per
/// core while `f` runs on the calling thread.
pub fn scan_from<F>(path: &Path, offset: u64, first_line: u64, mut f: F) -> io::Result<ScanReport>
where
    F: FnMut(LineAt, &Fact<'_>),
{
    scan_lines_from(path, offset, first_line, |at, _, fact| f(at, fact))
}

/// [`scan_from`], giving `f` each event's line as well, for a reader that decodes some lines
/// whole.
pub fn scan_lines_from<F>(path: &Path, offset: u64, first_line: u64, f: F) -> io::Result<ScanReport>
where
    F: FnMut(LineAt, &[u8], &Fact<'_>),
{
    scan_lines_within(path, offset, first_line, u64::MAX, f)
}

/// [`scan_lines_from`], reading no further than byte `until`: the lines that end before it. A
/// line it cuts is left pending, as a line still being written is.
pub fn scan_lines_within<F>(
    path: &Path,
    offset: u64,
    first_line: u64,
    until: u64,
    mut f: F,
) -> io::Result<ScanReport>
where
    F: FnMut(LineAt, &[u8], &Fact<'_>),
{
    scan_lines_while(path, offset, first_line, until, |at, line, fact| {
        f(at, line, fact);
        ControlFlow::Continue(())
    })
}

/// [`scan_lines_within`] until `f` asks to stop (an export the person cancelled): the file is
/// read no further, and the report counts the lines up to the one `f` stopped at, its
/// `end_offset` just past that line.
pub fn scan_lines_while<F>(
    path: &Path,
    offset: u64,
    first_line: u64,
    until: u64,
    mut f: F,
) -> io::Result<ScanReport>
where
    F: FnMut(LineAt, &[u8], &Fact<'_>) -> ControlFlow<()>,
{
    let reader = BlockReader::open(path, offset, until)?;
    if reader.left() <= BLOCK as u64 {
        scan_here(reader, first_line, &mut f)
    } else {
        scan_in_threads(reader, first_line, f)
    }
}

/// A log that was no longer than a block when it was opened, read, checked and folded on the
/// calling thread: a reader and a decoder per core would cost more to start than the work (a
/// `control` or a `resume` reads a log of a few hundred lines). Should it grow meanwhile, it
/// is read on to its end here all the same.
fn scan_here<F>(mut reader: BlockReader, mut next_line: u64, f: &mut F) -> io::Result<ScanReport>
where
    F: FnMut(LineAt, &[u8], &Fact<'_>) -> ControlFlow<()>,
{
    let mut report = ScanReport::default();
    let mut spare: Option<Marked> = None;
    loop {
        let (data, lines, kept) = Marked::reused(spare.take());
        let Some(block) = reader.next_block(data)? else { break };
        let marked = mark_block(block, lines, kept);
        if let ControlFlow::Break(at) = fold_block(&marked, next_line, &mut report, f) {
            report.end_offset = at;
            return Ok(report);
        }
        next_line += marked.lines.len() as u64;
        spare = Some(marked);
    }
    report.end_offset = reader.offset;
    report.pending_bytes = reader.pending();
    Ok(report)
}

/// The pipeline of the module's docs: one thread reads, one per core decodes, the calling
/// thread folds.
fn scan_in_threads<F>(mut reader: BlockReader, first_line: u64, mut f: F) -> io::Result<ScanReport>
where
    F: FnMut(LineAt, &[u8], &Fact<'_>) -> ControlFlow<()>,
{
    let mut report = ScanReport::default();
    let decoders = std::thread::available_parallelism().map_or(1, usize::from).min(MAX_DECODERS);
    // A folded block's buffer and vectors go back to be filled again: allocating them afresh
    // for each block costs a page fault per page.
    let (spare_tx, spare_rx) = mpsc::channel::<Marked>();
    let mut next_line = first_line;
    let read = std::thread::scope(|s| -> io::Result<()> {
        let mut inputs = Vec::with_capacity(decoders);
        let mut outputs = Vec::with_capacity(decoders);
        for _ in 0..decoders {
            let (in_tx, in_rx) = mpsc::sync_channel::<(Block, Vec<_>, KeptValues)>(1);
            let (out_tx, out_rx) = mpsc::sync_channel::<Marked>(1);
            s.spawn(move || {
                for (block, lines, kept) in in_rx {
                    if out_tx.send(mark_block(block, lines, kept)).is_err() {
                        return;
                    }
                }
            });
            inputs.push(in_tx);
            outputs.push(out_rx);
        }
        let feeder = s.spawn(move || -> io::Result<(BlockReader, u64)> {
            let mut sent = 0u64;
            loop {
                let (data, lines, kept) = Marked::reused(spare_rx.try_recv().ok());
                let Some(block) = reader.next_block(data)? else { break };
                let turn = (sent % inputs.len() as u64) as usize;
                if inputs[turn].send((block, lines, kept)).is_err() {
                    break;
                }
                sent += 1;
            }
            Ok((reader, sent))
        });
        // Blocks come back in the turn they went out, so taking them in turn keeps the order;
        // a decoder's channel closes once the reader is done with it.
        let mut turn = 0usize;
        let mut stopped_at = None;
        while let Ok(marked) = outputs[turn].recv() {
            if let ControlFlow::Break(at) = fold_block(&marked, next_line, &mut report, &mut f) {
                stopped_at = Some(at);
                break;
            }
            next_line += marked.lines.len() as u64;
            let _ = spare_tx.send(marked);
            turn = (turn + 1) % outputs.len();
        }
        // Closing the decoders' channels ends them, and then the reader, whose next block has
        // nowhere to go.
        drop(outputs);
        let (reader, _) = match feeder.join() {
            Ok(done) => done?,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        report.end_offset = stopped_at.unwrap_or(reader.offset);
        report.pending_bytes = if stopped_at.is_some() { 0 } else { reader.pending() };
        Ok(())
    });
    read?;
    Ok(report)
}

/// [`scan_from`] over the whole file. A missing file is an empty log.
pub fn scan<F>(path: &Path, f: F) -> io::Result<ScanReport>
where
    F: FnMut(LineAt, &Fact<'_>),
{
    match scan_from(path, 0, 1, f) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(ScanReport::default()),
        other => other,
    }
}

/// Splits freshly appended bytes into complete lines, keeping a partial last line for later.
/// Used by the tailer, where the bytes arrive a few at a time.
///
/// ```
/// use harrow::session::scan::LineSplitter;
/// let mut lines = LineSplitter::at(0, 1);
/// assert!(lines.feed(b"{\"type\":").is_empty());
/// let done = lines.feed(b"\"stop\"}\n{\"ty");
/// assert_eq!(done[0].1, b"{\"type\":\"stop\"}");
/// assert_eq!(done[0].0.number, 1);
/// assert_eq!(lines.pending(), 4);
/// ```
#[derive(Debug, Default)]
pub struct LineSplitter {
    partial: Vec<u8>,
    /// Offset in the file of the first byte of `partial`.
    partial_offset: u64,
    next_line: u64,
    /// Bytes of the current line dropped because it passed [`MAX_LINE`].
    skipping: u64,
}

impl LineSplitter {
    /// A splitter whose next byte is at `offset`, on line `next_line` (1-based).
    pub fn at(offset: u64, next_line: u64) -> LineSplitter {
        LineSplitter { partial: Vec::new(), partial_offset: offset, next_line, skipping: 0 }
    }

    /// Feeds bytes that follow everything fed so far; returns each completed line with where it
    /// sits in the file.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<(LineAt, Vec<u8>)> {
        let mut out = Vec::new();
        let mut rest = bytes;
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            if self.skipping > 0 || self.partial.len() + nl > MAX_LINE {
                // The end of an overlong line: counted, never given.
                let held = std::mem::take(&mut self.partial).len() as u64;
                self.partial_offset += self.skipping + held + nl as u64 + 1;
                self.skipping = 0;
                self.next_line += 1;
                rest = &rest[nl + 1..];
                continue;
            }
            let mut line = std::mem::take(&mut self.partial);
            line.extend_from_slice(&rest[..nl]);
            let had_cr = line.last() == Some(&b'\r');
            if had_cr {
                line.pop();
            }
            let at = LineAt {
                number: self.next_line,
                offset: self.partial_offset,
                len: line.len() as u32,
            };
            self.partial_offset += (line.len() + 1) as u64 + u64::from(had_cr);
            self.next_line += 1;
            out.push((at, line));
            rest = &rest[nl + 1..];
        }
        if self.skipping > 0 {
            self.skipping += rest.len() as u64;
        } else if self.partial.len() + rest.len() > MAX_LINE {
            self.skipping = (self.partial.len() + rest.len()) as u64;
            self.partial = Vec::new();
        } else {
            self.partial.extend_from_slice(rest);
        }
        out
    }

    /// Bytes of an incomplete last line held back (or skipped, when it is overlong).
    pub fn pending(&self) -> usize {
        self.partial.len() + usize::try_from(self.skipping).unwrap_or(usize::MAX)
    }

    /// The offset just past the last complete line.
    pub fn offset(&self) -> u64 {
        self.partial_offset
    }

    pub fn next_line(&self) -> u64 {
        self.next_line
    }

    /// Whether a complete line is blank, by the same rule [`scan`] uses.
    pub fn is_blank(line: &[u8]) -> bool {
        is_blank(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;
    use std::io::Write;

    #[test]
    fn a_scan_asked_to_stop_gives_no_line_after_that_and_says_where_it_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        // Every other line ends in CRLF, as a log edited on another system may.
        let line = |seq: u64| {
            let end = if seq.is_multiple_of(2) { "\r\n" } else { "\n" };
            format!("{{\"ts\":\"t\",\"seq\":{seq},\"type\":\"stop\",\"payload\":{{}}}}{end}")
        };
        // Several blocks' worth, so the decoders and the reader are all at work when it stops.
        let text: String = (1..=60_000).map(line).collect();
        std::fs::write(&path, &text).unwrap();
        let mut seen = 0u64;
        let report = scan_lines_while(&path, 0, 1, u64::MAX, |at, _, _| {
            seen += 1;
            if at.number == 1234 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        })
        .unwrap();
        assert_eq!(seen, 1234);
        assert_eq!(report.events, 1234);
        let through: usize = (1..=1234).map(|n| line(n).len()).sum();
        assert_eq!(report.end_offset, through as u64);
        assert_eq!(report.pending_bytes, 0);
    }

    /// The same lines read on the calling thread (as a small log is) and in the threads (as a
    /// large one is) give the same facts, numbers, offsets and report, stopped or not.
    #[test]
    fn a_small_log_read_here_reads_as_the_threads_read_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let text = concat!(
            "{\"ts\":\"t\",\"seq\":1,\"type\":\"session_start\",\"payload\":{\"task_id\":\"T-001\"}}\n",
            "\n",
            "{\"seq\":2,\"type\":\"stop\"}\r\n",
            "not json\n",
            "{\"seq\":3,\"type\":\"model_call\",\"payload\":{\"prompt_tokens\":12}}\n",
            "{\"seq\":4,\"type\":\"model_call\"",
        );
        // Several blocks of lines before the odd ones: the calling thread reads on past a first
        // block should a log grow while it is read.
        let filler = (0..40_000).fold(String::new(), |mut all, n| {
            let _ = writeln!(
                all,
                "{{\"seq\":{n},\"type\":\"tool_call\",\"payload\":{{\"tool\":\"bash\"}}}}"
            );
            all
        });
        std::fs::write(&path, format!("{filler}{text}")).unwrap();
        let read = |stop_at: u64, threads: bool| {
            let mut seen = Vec::new();
            let f = |at: LineAt, line: &[u8], fact: &Fact<'_>| {
                seen.push((at, line.to_vec(), format!("{fact:?}")));
                if at.number == stop_at {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            };
            let reader = BlockReader::open(&path, 0, u64::MAX).unwrap();
            assert!(reader.left() > 2 * BLOCK as u64);
            let report = if threads {
                scan_in_threads(reader, 1, f).unwrap()
            } else {
                let mut f = f;
                scan_here(reader, 1, &mut f).unwrap()
            };
            (seen, report)
        };
        for stop_at in [0, 1, 30_000, 40_001, 40_003, 40_005] {
            let (here, threads) = (read(stop_at, false), read(stop_at, true));
            assert_eq!(here.0, threads.0, "stopped at {stop_at}");
            assert_eq!(here.1, threads.1, "stopped at {stop_at}");
        }
        let (seen, report) = read(0, false);
        assert_eq!(seen.len(), 40_003);
        assert_eq!(
            (report.blank, report.unreadable.clone(), report.pending_bytes),
            (1, vec![40_004], 28)
        );
    }

    #[test]
    fn a_report_extended_by_a_later_scan_counts_both_and_keeps_the_first_unreadable_lines() {
        let mut first = ScanReport {
            lines: 1500,
            events: 400,
            blank: 1,
            end_offset: 90,
            ..ScanReport::default()
        };
        for line in 1..=900 {
            first.note_unreadable(line);
        }
        let mut later = ScanReport {
            lines: 10,
            events: 4,
            end_offset: 120,
            pending_bytes: 7,
            ..ScanReport::default()
        };
        for line in 1501..=1700 {
            later.note_unreadable(line);
        }
        first.extend(later);
        assert_eq!((first.lines, first.events, first.blank), (1510, 404, 1));
        assert_eq!(first.unreadable_count, 1100);
        assert_eq!(first.unreadable.len(), UNREADABLE_KEPT);
        assert_eq!(first.unreadable.last(), Some(&1600));
        assert_eq!((first.end_offset, first.pending_bytes), (120, 7));
    }

    fn scan_bytes(bytes: &[u8]) -> (Vec<(LineAt, String)>, ScanReport) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::File::create(&path).unwrap().write_all(bytes).unwrap();
        let mut seen = Vec::new();
        let report = scan(&path, |at, f| seen.push((at, f.kind().to_owned()))).unwrap();
        (seen, report)
    }

    /// A line past [`MAX_LINE`] is one unreadable line at its number, never held; the lines
    /// around it keep their numbers and offsets, and one that never ends is pending.
    #[test]
    fn an_overlong_line_is_skipped_as_unreadable_with_every_other_line_in_place() {
        let long = vec![b'x'; MAX_LINE + 10];
        let mut text = b"{\"type\":\"a\"}\n".to_vec();
        text.extend_from_slice(&long);
        text.extend_from_slice(b"\n{\"type\":\"b\"}\n");
        let (seen, report) = scan_bytes(&text);
        let kinds: Vec<&str> = seen.iter().map(|(_, k)| k.as_str()).collect();
        assert_eq!(kinds, ["a", "b"]);
        assert_eq!(seen[1].0.number, 3);
        assert_eq!(seen[1].0.offset, 13 + long.len() as u64 + 1);
        assert_eq!(report.unreadable, vec![2]);
        assert_eq!(report.end_offset, text.len() as u64);
        let mut endless = b"{\"type\":\"a\"}\n".to_vec();
        endless.extend_from_slice(&long);
        let (seen, report) = scan_bytes(&endless);
        assert_eq!(seen.len(), 1);
        assert_eq!((report.end_offset, report.pending_bytes), (13, long.len() as u64));
        // The tailer's splitter, fed a few bytes at a time, the same.
        let mut lines = LineSplitter::at(0, 1);
        let mut got = Vec::new();
        for chunk in text.chunks(1 << 20) {
            got.extend(lines.feed(chunk));
        }
        assert_eq!(got.len(), 2);
        assert_eq!((got[1].0.number, got[1].0.offset), (3, 13 + long.len() as u64 + 1));
    }

    #[test]
    fn classifies_every_kind_of_line() {
        let text = b"{\"type\":\"a\"}\n\n{broken\n{\"type\":\"b\"}\r\n\xff\xfe\n   \n{\"type\":\"c\"}\n{\"type\":\"torn";
        let (seen, report) = scan_bytes(text);
        let kinds: Vec<&str> = seen.iter().map(|(_, k)| k.as_str()).collect();
        assert_eq!(kinds, ["a", "b", "c"]);
        assert_eq!(seen[1].0.number, 4);
        assert_eq!(seen[1].0.offset, 22);
        assert_eq!(seen[1].0.len, 12);
        assert_eq!(report.lines, 7);
        assert_eq!(report.blank, 2);
        assert_eq!(report.unreadable, vec![3, 5]);
        assert_eq!(report.unreadable_sentence().as_deref(), Some("2 unreadable lines (3, 5)"));
        assert_eq!(report.pending_bytes, 13);
        assert_eq!(report.end_offset, text.len() as u64 - 13);
    }

    #[test]
    fn missing_and_empty_files_are_empty_logs() {
        let dir = tempfile::tempdir().unwrap();
        let report = scan(&dir.path().join("nope.jsonl"), |_, _| {}).unwrap();
        assert_eq!(report, ScanReport::default());
        assert_eq!(scan_bytes(b"").1, ScanReport::default());
    }

    #[test]
    fn a_small_log_gets_a_block_of_its_size_and_one_that_grows_meanwhile_is_read_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("events.jsonl");
        std::fs::write(&path, "{\"a\":1}\n{\"b\":2}\n").unwrap();
        let mut reader = BlockReader::open(&path, 0, u64::MAX).unwrap();
        // The log grows after it was opened, by more than a block.
        let more = "{\"c\":3}\n".repeat(BLOCK / 8 + 10);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, more.as_bytes()))
            .unwrap();
        let first = reader.next_block(None).unwrap().unwrap();
        assert!(first.buffer.len() <= 17, "a 16-byte log read into {} bytes", first.buffer.len());
        let mut read = first.len;
        let mut spare = Some(first.buffer);
        while let Some(block) = reader.next_block(spare.take()).unwrap() {
            read += block.len;
            spare = Some(block.buffer);
        }
        assert_eq!(read as u64, std::fs::metadata(&path).unwrap().len());
        assert_eq!(reader.pending(), 0);
    }

    #[test]
    fn lines_longer_than_a_block_and_many_blocks_keep_order() {
        let big = format!(
            "{{\"type\":\"big\",\"payload\":{{\"content\":\"{}\"}}}}\n",
            "x".repeat(BLOCK + 10)
        );
        let mut text = Vec::new();
        for i in 0..20_000 {
            text.extend_from_slice(format!("{{\"seq\":{i},\"type\":\"e\"}}\n").as_bytes());
            if i == 7_000 {
                text.extend_from_slice(big.as_bytes());
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, &text).unwrap();
        let mut seqs = Vec::new();
        let mut numbers = Vec::new();
        let report = scan(&path, |at, f| {
            numbers.push(at.number);
            if let Some(s) = f.seq.value {
                seqs.push(s);
            }
        })
        .unwrap();
        assert_eq!(report.events, 20_001);
        assert_eq!(seqs, (0..20_000).collect::<Vec<_>>());
        assert_eq!(numbers, (1..=20_001).collect::<Vec<_>>());
        assert_eq!(report.end_offset, text.len() as u64);
    }

    #[test]
    fn splitter_holds_partial_lines() {
        let mut s = LineSplitter::at(100, 5);
        assert!(s.feed(b"{\"a\"").is_empty());
        assert_eq!(s.pending(), 4);
        let lines = s.feed(b":1}\r\n{}\nxy");
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].0, LineAt { number: 5, offset: 100, len: 7 });
        assert_eq!(lines[0].1, b"{\"a\":1}");
        assert_eq!(lines[1].0, LineAt { number: 6, offset: 109, len: 2 });
        assert_eq!(s.offset(), 112);
        assert_eq!(s.pending(), 2);
    }
}
