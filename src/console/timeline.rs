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
    /// The lane of each mark (same order), in a run with lanes.
    lanes: Vec<Option<u64>>,
    /// The worst marker per cell for the last (events, width, lane) drawn: the log's markers are
    /// walked again only when the log grows or the strip changes width, not every frame.
    columns: Option<Columns>,
}

/// The worst marker per cell, for a log of `events` drawn `width` cells wide.
#[derive(Debug)]
struct Columns {
    events: usize,
    width: usize,
    lane: Option<u64>,
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
        self.lanes.push(super::lanes::lane_of(fact));
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

    /// The worst mark in each column; with `lane`, only that lane's marks and the run's.
    fn columns(&mut self, total: usize, width: usize, lane: Option<u64>) -> &[Option<Mark>] {
        if self.columns.as_ref().is_none_or(|c| (c.events, c.width, c.lane) != (total, width, lane))
        {
            let lanes = &self.lanes;
            let kept = |i: &usize| lane.is_none() || lanes[*i].is_none_or(|l| Some(l) == lane);
            let mut marks = (0..self.marks.len()).filter(kept).map(|i| &self.marks[i]).peekable();
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
            self.columns = Some(Columns { events: total, width, lane, worst });
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
        lane: Option<u64>,
        task_of: impl Fn(usize) -> u16,
    ) -> Vec<Cell> {
        if total == 0 || width == 0 {
            return Vec::new();
        }
        let cursor = applied.saturating_sub(1) * width / total;
        let columns = self.columns(total, width, lane).to_vec();
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
            t.note(
                pos,
                &Fact::decode(line.as_bytes(), &mut crate::session::fact::KeptValues::default())
                    .unwrap_or_else(|e| panic!("{e}")),
            );
        }
        let cells = t.cells(10, 6, 5, None, |p| u16::from(p >= 4));
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

    #[test]
    fn following_a_lane_shows_its_marks_and_the_runs_only() {
        let mut t = Timeline::default();
        for (pos, line) in [
            (1, r#"{"lane":1,"type":"evaluator_verdict","payload":{"verdict":"reject"}}"#),
            (5, r#"{"lane":2,"type":"evaluator_verdict","payload":{"verdict":"accept"}}"#),
            (8, r#"{"type":"task_failed","payload":{}}"#),
        ] {
            t.note(
                pos,
                &Fact::decode(line.as_bytes(), &mut crate::session::fact::KeptValues::default())
                    .unwrap_or_else(|e| panic!("{e}")),
            );
        }
        let marks = |cells: Vec<Cell>| -> Vec<Mark> {
            cells
                .into_iter()
                .filter_map(|c| if let Cell::Mark(m) = c { Some(m) } else { None })
                .collect()
        };
        assert_eq!(
            marks(t.cells(10, 10, 10, None, |_| 0)),
            [Mark::Reject, Mark::Accept, Mark::Failure]
        );
        assert_eq!(marks(t.cells(10, 10, 10, Some(2), |_| 0)), [Mark::Accept, Mark::Failure]);
        assert_eq!(marks(t.cells(10, 10, 10, Some(1), |_| 0)), [Mark::Reject, Mark::Failure]);
    }
}
