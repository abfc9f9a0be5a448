//! Lanes in the console: which task each lane works, since when, and each lane's own rows —
//! its events and the whole run's (a start, a stop, an operator's command) — so the Worker
//! pane can follow one lane.

use crate::session::fact::Fact;
use std::collections::BTreeMap;

/// The lane an event was run in, when the run had lanes.
pub fn lane_of(fact: &Fact<'_>) -> Option<u64> {
    fact.lane.count()
}

/// What a lane works on, as of the cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneMark {
    pub task: String,
    /// When the lane took the task (its first event there), in milliseconds since the epoch.
    pub since_ms: Option<i64>,
    /// The lane's latest event about the task: where a finished task's time stops.
    pub last_ms: Option<i64>,
}

/// Every lane's task, as of the cursor.
#[derive(Debug, Clone, Default)]
pub struct LaneMarks(BTreeMap<u64, LaneMark>);

impl LaneMarks {
    /// Notes the task a lane's event names.
    pub fn apply(&mut self, fact: &Fact<'_>) {
        let (Some(lane), Some(task)) = (lane_of(fact), fact.payload.task_id.get()) else {
            return;
        };
        let at = fact
            .ts
            .get()
            .and_then(crate::session::timestamp::parse)
            .map(jiff::Timestamp::as_millisecond);
        if let Some(mark) = self.0.get_mut(&lane).filter(|m| m.task == task) {
            mark.last_ms = at.or(mark.last_ms);
            return;
        }
        self.0.insert(lane, LaneMark { task: task.to_owned(), since_ms: at, last_ms: at });
    }

    pub fn get(&self, lane: u64) -> Option<&LaneMark> {
        self.0.get(&lane)
    }

    pub fn iter(&self) -> impl Iterator<Item = (u64, &LaneMark)> {
        self.0.iter().map(|(n, m)| (*n, m))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The lane after `lane` (`None`: every lane), as a key cycles them: every lane in turn,
    /// then all of them together again.
    pub fn after(&self, lane: Option<u64>) -> Option<u64> {
        match lane {
            None => self.0.keys().next().copied(),
            Some(n) => self.0.range(n + 1..).next().map(|(k, _)| *k),
        }
    }
}

/// Each lane's rows, per filter: its own events and the run's, in log order.
#[derive(Debug, Default)]
pub struct LaneStreams {
    /// Rows of no lane (the whole run's), which every lane's stream holds too.
    unlaned: [Vec<usize>; 3],
    lanes: BTreeMap<u64, [Vec<usize>; 3]>,
}

impl LaneStreams {
    /// Notes a shown row at `pos`, in `lane` (or the whole run's), for the filters that keep
    /// it.
    pub fn note(&mut self, pos: usize, lane: Option<u64>, keeps: [bool; 3]) {
        let push = |streams: &mut [Vec<usize>; 3]| {
            for (stream, kept) in streams.iter_mut().zip(keeps) {
                if kept {
                    stream.push(pos);
                }
            }
        };
        if let Some(n) = lane {
            let unlaned = &self.unlaned;
            push(self.lanes.entry(n).or_insert_with(|| unlaned.clone()));
        } else {
            push(&mut self.unlaned);
            self.lanes.values_mut().for_each(push);
        }
    }

    /// A lane's rows as `filter` (by index) keeps them; `None` for a lane never seen.
    pub fn of(&self, lane: u64, filter: usize) -> Option<&[usize]> {
        self.lanes.get(&lane).and_then(|s| s.get(filter)).map(Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_stream_holds_its_rows_and_the_runs_and_a_late_lane_starts_with_the_runs() {
        let mut s = LaneStreams::default();
        s.note(0, None, [true, true, false]);
        s.note(1, Some(1), [true, false, false]);
        s.note(2, Some(2), [true, false, true]);
        s.note(3, None, [true, false, false]);
        s.note(4, Some(1), [true, false, false]);
        assert_eq!(s.of(1, 0), Some(&[0, 1, 3, 4][..]));
        assert_eq!(s.of(2, 0), Some(&[0, 2, 3][..]));
        assert_eq!(s.of(2, 2), Some(&[2][..]));
        assert_eq!(s.of(1, 1), Some(&[0][..]));
        assert_eq!(s.of(3, 0), None);
    }

    #[test]
    fn the_lane_key_cycles_every_lane_then_all() {
        let mut marks = LaneMarks::default();
        for (lane, task) in [(1, "T-002"), (2, "T-003")] {
            let line = format!(
                r#"{{"ts":"2026-11-24T00:00:00.000Z","seq":1,"lane":{lane},"type":"tool_call","payload":{{"task_id":"{task}"}}}}"#
            );
            marks.apply(
                &Fact::decode(line.as_bytes(), &mut crate::session::fact::KeptValues::default())
                    .unwrap(),
            );
        }
        assert_eq!(marks.get(2).map(|m| m.task.as_str()), Some("T-003"));
        assert_eq!(marks.after(None), Some(1));
        assert_eq!(marks.after(Some(1)), Some(2));
        assert_eq!(marks.after(Some(2)), None);
    }
}
