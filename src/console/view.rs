//! The console's view state: a fold of events, the same for replay and live watching; only the
//! clock that feeds it differs. It keeps figures (through the summary fold) and the positions of
//! the events the stream shows — never their text, which is fetched for the rows on screen.

use crate::session::fact::Fact;
use crate::session::summary::{Summary, SummaryFold};

/// Whether an event earns a row in the stream.
fn shown(fact: &Fact<'_>) -> bool {
    match fact.kind() {
        "model_call" => fact.payload.health.get().is_some_and(|h| h != "ok"),
        "hook_run" | "prompt_assembled" | "memory_load" | "context_reset" | "ledger_appended"
        | "feedback_sent" => false,
        "task_state" => matches!(fact.payload.to.get(), Some("running" | "needs_operator")),
        "task_done" => fact.payload.below_bar.0 == Some(true),
        _ => true,
    }
}

/// What the panes read.
#[derive(Debug)]
pub struct View {
    fold: SummaryFold,
    summary: Summary,
    dirty: bool,
    /// Index positions of the events shown in the stream, in file order.
    pub stream: Vec<usize>,
    /// How many events have been applied: the replay cursor.
    pub applied: usize,
    /// The last pause, resume, step or stop the loop applied.
    pub operator: Option<String>,
}

impl View {
    pub fn new(session_id: &str) -> View {
        let fold = SummaryFold::new(Some(session_id.to_owned()));
        View {
            summary: fold.clone().finish(&crate::session::scan::ScanReport::default()),
            fold,
            dirty: false,
            stream: Vec::new(),
            applied: 0,
            operator: None,
        }
    }

    /// Applies the event at index position `pos` (positions arrive in order).
    pub fn apply(&mut self, pos: usize, fact: &Fact<'_>) {
        self.fold.apply(fact);
        if let ("operator_action", Some(op @ ("pause" | "resume" | "step" | "stop"))) =
            (fact.kind(), fact.payload.action.get())
        {
            self.operator = Some(op.to_owned());
        }
        if shown(fact) {
            self.stream.push(pos);
        }
        self.applied = pos + 1;
        self.dirty = true;
    }

    /// The figures as of the last applied event.
    pub fn summary(&mut self) -> &Summary {
        if self.dirty {
            let report = crate::session::scan::ScanReport {
                events: self.applied as u64,
                ..Default::default()
            };
            self.summary = self.fold.clone().finish(&report);
            self.dirty = false;
        }
        &self.summary
    }
}

/// Replay time: event timestamps with idle gaps longer than `max_gap_ms` shortened to it, so a
/// night-long pause does not stall playback.
pub fn compressed_times(ts_ms: &[i64], max_gap_ms: i64) -> Vec<i64> {
    let mut out = Vec::with_capacity(ts_ms.len());
    let mut t = 0i64;
    for (i, &ms) in ts_ms.iter().enumerate() {
        if i > 0 {
            t += (ms - ts_ms[i - 1]).clamp(0, max_gap_ms);
        }
        out.push(t);
    }
    out
}

/// The replay clock: virtual milliseconds that run at a chosen speed while playing.
#[derive(Debug, Clone, PartialEq)]
pub struct Clock {
    pub playing: bool,
    /// Index into [`SPEEDS`].
    pub speed: usize,
    pub now_ms: f64,
}

/// Playback speeds; the last is "as fast as possible".
pub const SPEEDS: [f64; 9] = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, f64::INFINITY];

impl Clock {
    pub fn new(speed: f64) -> Clock {
        let speed = SPEEDS.iter().position(|s| *s >= speed).unwrap_or(SPEEDS.len() - 1);
        Clock { playing: true, speed, now_ms: 0.0 }
    }

    /// Advances by `real_ms` of wall time.
    pub fn tick(&mut self, real_ms: f64) {
        if self.playing {
            self.now_ms += real_ms * SPEEDS[self.speed];
        }
    }

    pub fn label(&self) -> String {
        match SPEEDS[self.speed] {
            s if s.is_infinite() => "max".into(),
            s if s < 1.0 => format!("{s}×"),
            s => format!("{s:.0}×"),
        }
    }

    pub fn faster(&mut self) {
        self.speed = (self.speed + 1).min(SPEEDS.len() - 1);
    }

    pub fn slower(&mut self) {
        self.speed = self.speed.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_gaps_are_compressed() {
        assert_eq!(compressed_times(&[1000, 1000, 3000, 3_600_000], 2000), [0, 0, 2000, 4000]);
    }

    #[test]
    fn the_clock_runs_at_its_speed_only_while_playing() {
        let mut c = Clock::new(4.0);
        c.tick(100.0);
        assert!((c.now_ms - 400.0).abs() < 1e-9);
        c.playing = false;
        c.tick(100.0);
        assert!((c.now_ms - 400.0).abs() < 1e-9);
        c.faster();
        assert_eq!(c.label(), "8×");
        for _ in 0..10 {
            c.faster();
        }
        assert_eq!(c.label(), "max");
        c.speed = 0;
        assert_eq!(c.label(), "0.5×");
    }
}
