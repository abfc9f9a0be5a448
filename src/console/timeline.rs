//! The timeline strip: the whole session in one line, task bands with markers for accepts,
//! rejections and failures, and the replay cursor — the scrubber `0`–`9` seek along.

use crate::session::event::EventKind;
use crate::session::fact::Fact;
use crate::session::state::Ruling;

/// Something on the timeline worth a marker. Later variants win a shared cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mark {
    Accept,
    Reject,
    Failure,
}

/// What one cell of the strip shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// Events of a task; bands alternate so neighbouring tasks stand apart.
    Band(bool),
    Mark(Mark),
    /// Events not yet replayed (their markers still show, to seek to).
    Ahead,
    Cursor,
}

/// Every marker in the log, in position order; kept for the whole log, replayed or not.
#[derive(Debug, Default)]
pub struct Timeline {
    marks: Vec<(usize, Mark)>,
    /// The worst marker per cell for the last (events, width) drawn: the log's markers are
    /// walked again only when the log grows or the strip changes width, not every frame.
    columns: Option<Columns>,
}

/// The worst marker per cell, for a log of `events` drawn `width` cells wide.
#[derive(Debug)]
struct Columns {
    events: usize,
    width: usize,
    worst: Vec<Option<Mark>>,
}

impl Timeline {
    /// Notes the event at `pos` if it earns a marker.
    pub fn note(&mut self, pos: usize, fact: &Fact<'_>) {
        let mark = match fact.event_kind() {
            Some(EventKind::Verdict | EventKind::JudgeVerdict)
                if fact.ruling() == Some(Ruling::Accept) =>
            {
                Mark::Accept
            }
            Some(EventKind::Verdict | EventKind::JudgeVerdict) => Mark::Reject,
            Some(EventKind::ValidatorRun) if fact.payload.passed.0 == Some(false) => Mark::Failure,
            Some(EventKind::TaskFailed) => Mark::Failure,
            _ => return,
        };
        self.marks.push((pos, mark));
    }

    /// The nearest marker that `want` picks, from `start` on (forward) or at or before it:
    /// how the jumps to verdicts and failures find their target without reading the log.
    pub fn find(&self, start: usize, forward: bool, want: impl Fn(Mark) -> bool) -> Option<usize> {
        if forward {
            let from = self.marks.partition_point(|(pos, _)| *pos < start);
            self.marks[from..].iter().find(|(_, m)| want(*m)).map(|(pos, _)| *pos)
        } else {
            let upto = self.marks.partition_point(|(pos, _)| *pos <= start);
            self.marks[..upto].iter().rev().find(|(_, m)| want(*m)).map(|(pos, _)| *pos)
        }
    }

    fn columns(&mut self, total: usize, width: usize) -> &[Option<Mark>] {
        if self.columns.as_ref().is_none_or(|c| (c.events, c.width) != (total, width)) {
            let mut marks = self.marks.iter().peekable();
            let worst = (0..width)
                .map(|col| {
                    let end = ((col + 1) * total / width).max(col * total / width + 1);
                    let mut best: Option<Mark> = None;
                    while let Some((_, mark)) = marks.next_if(|(pos, _)| *pos < end) {
                        best = best.max(Some(*mark));
                    }
                    best
                })
                .collect();
            self.columns = Some(Columns { events: total, width, worst });
        }
        self.columns.as_ref().map_or(&[], |c| c.worst.as_slice())
    }

    /// The strip for `total` events in `width` cells with the cursor after `applied` events;
    /// `task_of` names the task (as a number) of an event, for the bands.
    pub fn cells(
        &mut self,
        total: usize,
        applied: usize,
        width: usize,
        task_of: impl Fn(usize) -> u16,
    ) -> Vec<Cell> {
        if total == 0 || width == 0 {
            return Vec::new();
        }
        let cursor = applied.saturating_sub(1) * width / total;
        let columns = self.columns(total, width).to_vec();
        columns
            .into_iter()
            .enumerate()
            .map(|(col, best)| {
                let start = col * total / width;
                if col == cursor && applied > 0 {
                    Cell::Cursor
                } else if let Some(mark) = best {
                    Cell::Mark(mark)
                } else if start >= applied {
                    Cell::Ahead
                } else {
                    Cell::Band(task_of(start).is_multiple_of(2))
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_land_in_their_cells_and_the_worst_wins() {
        let mut t = Timeline::default();
        for (pos, line) in [
            (2, r#"{"type":"evaluator_verdict","payload":{"verdict":"reject"}}"#),
            (3, r#"{"type":"evaluator_verdict","payload":{"verdict":"accept"}}"#),
            (9, r#"{"type":"task_failed","payload":{}}"#),
        ] {
            t.note(pos, &Fact::decode(line.as_bytes()).unwrap_or_else(|e| panic!("{e}")));
        }
        let cells = t.cells(10, 6, 5, |p| u16::from(p >= 4));
        assert_eq!(
            cells,
            [
                Cell::Band(true),
                Cell::Mark(Mark::Reject),
                Cell::Cursor,
                Cell::Ahead,
                Cell::Mark(Mark::Failure),
            ]
        );
    }
}
