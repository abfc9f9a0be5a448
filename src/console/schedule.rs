//! When the console draws and how long it waits for input: whatever arrives between two
//! frames is applied and drawn once, at most about 60 frames a second however fast lines
//! arrive; a key press is drawn at once; nothing is drawn when nothing changed; and when
//! nothing plays or counts, the loop blocks, so an idle console uses no CPU.

use std::time::{Duration, Instant};

/// The shortest time between two frames (about 60 a second), and the replay clock's tick.
pub const FRAME: Duration = Duration::from_millis(16);

/// While a live run waits on something, the status line counts the seconds: a frame a second.
pub const WAIT_TICK: Duration = Duration::from_secs(1);

/// While watching a run that has not ended, how often the loop looks whether a process still
/// holds it, so a run killed in silence is said to have crashed without a key press.
pub const LIVENESS: Duration = Duration::from_secs(2);

/// The frame clock of one console.
#[derive(Debug, Clone)]
pub struct Schedule {
    dirty: bool,
    /// Set by the person's own input: that frame is drawn at once, not held to the cap.
    urgent: bool,
    last_draw: Instant,
    last_tick: Instant,
}

impl Schedule {
    /// A schedule whose first frame is due at once.
    pub fn new(now: Instant) -> Schedule {
        Schedule {
            dirty: true,
            urgent: true,
            last_draw: now.checked_sub(FRAME).unwrap_or(now),
            last_tick: now,
        }
    }

    /// Something changed on screen.
    pub fn changed(&mut self) {
        self.dirty = true;
    }

    /// The person pressed a key or used the mouse: draw the answer without waiting.
    pub fn pressed(&mut self) {
        self.dirty = true;
        self.urgent = true;
    }

    pub fn should_draw(&self, now: Instant) -> bool {
        self.dirty && (self.urgent || now.duration_since(self.last_draw) >= FRAME)
    }

    pub fn drawn(&mut self, now: Instant) {
        self.dirty = false;
        self.urgent = false;
        self.last_draw = now;
    }

    /// How long to wait for input before something is due: `None` blocks until input comes.
    /// `watching`: a run that has not ended is watched, so its liveness is looked at again.
    /// `counting`: how often a wait's count (or a streaming reply) is drawn again, if at all.
    pub fn wait(
        &self,
        now: Instant,
        playing: bool,
        counting: Option<Duration>,
        watching: bool,
    ) -> Option<Duration> {
        let due = self.due(now, playing, counting);
        if watching { Some(due.map_or(LIVENESS, |d| d.min(LIVENESS))) } else { due }
    }

    fn due(&self, now: Instant, playing: bool, counting: Option<Duration>) -> Option<Duration> {
        if self.dirty {
            Some(FRAME.saturating_sub(now.duration_since(self.last_draw)))
        } else if playing {
            Some(FRAME.saturating_sub(now.duration_since(self.last_tick)))
        } else {
            counting.map(|every| every.saturating_sub(now.duration_since(self.last_draw)))
        }
    }

    /// The replay clock's due tick: the milliseconds of wall time it covers, when a frame's
    /// worth has passed while playing. While paused the tick clock stays at `now`, so playing
    /// again does not jump ahead.
    pub fn tick(&mut self, now: Instant, playing: bool) -> Option<f64> {
        let since = now.duration_since(self.last_tick);
        if playing && since < FRAME {
            return None;
        }
        self.last_tick = now;
        playing.then_some(since.as_secs_f64() * 1000.0)
    }

    /// A tick of a counted wait has passed since the last frame: draw the new count.
    pub fn count(&mut self, now: Instant, counting: Option<Duration>) {
        if counting.is_some_and(|every| now.duration_since(self.last_draw) >= every) {
            self.dirty = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_draws_at_once_and_lines_wait_for_the_frame() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0);
        assert!(s.should_draw(t0), "the first frame is due at once");
        s.drawn(t0);
        assert!(!s.should_draw(t0 + FRAME * 10), "nothing changed, nothing drawn");
        s.changed();
        assert!(!s.should_draw(t0 + Duration::from_millis(5)), "lines wait for the frame cap");
        assert!(s.should_draw(t0 + FRAME));
        s.pressed();
        assert!(s.should_draw(t0 + Duration::from_millis(1)), "a key is drawn at once");
    }

    #[test]
    fn an_idle_console_blocks_and_a_counting_one_wakes_each_second() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0);
        s.drawn(t0);
        assert_eq!(s.wait(t0, false, None, false), None, "idle: block until input");
        assert_eq!(s.wait(t0, false, Some(WAIT_TICK), false), Some(WAIT_TICK));
        assert_eq!(s.wait(t0, false, None, true), Some(LIVENESS), "a watched run is looked at");
        s.count(t0 + Duration::from_millis(500), Some(WAIT_TICK));
        assert!(!s.should_draw(t0 + Duration::from_millis(500)));
        s.count(t0 + WAIT_TICK, Some(WAIT_TICK));
        assert!(s.should_draw(t0 + WAIT_TICK), "the count moves on each second");
    }

    #[test]
    fn the_replay_clock_ticks_only_while_playing() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0);
        assert_eq!(s.tick(t0 + Duration::from_millis(5), true), None, "not a frame yet");
        let ms = s.tick(t0 + Duration::from_millis(20), true).unwrap();
        assert!((ms - 20.0).abs() < 0.5);
        assert_eq!(s.tick(t0 + Duration::from_secs(60), false), None);
        let after_pause = s.tick(t0 + Duration::from_secs(60) + FRAME, true).unwrap();
        assert!(after_pause < 20.0, "a pause is not played back as a jump: {after_pause}");
    }
}
