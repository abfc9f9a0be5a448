//! Timestamps as harrow writes them: UTC, RFC 3339, millisecond resolution.

use jiff::Timestamp;

/// Now, as written in `events.jsonl`: `2026-11-22T04:28:43.123Z`.
pub fn now() -> String {
    format_ts(Timestamp::now())
}

pub fn format_ts(ts: Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// Parses a log timestamp of either resolution (`…:43Z` from Tilth, `…:43.123Z` from harrow).
///
/// ```
/// use harrow::session::timestamp::parse;
/// let tilth = parse("2026-11-22T04:28:43Z").unwrap();
/// let harrow = parse("2026-11-22T04:28:43.250Z").unwrap();
/// assert_eq!((harrow - tilth).get_milliseconds(), 250);
/// ```
pub fn parse(ts: &str) -> Option<Timestamp> {
    ts.parse().ok()
}

/// A new session id: local time as Tilth names its folders, then six hex digits.
pub fn new_session_id() -> String {
    let now = Timestamp::now().to_zoned(local_zone());
    let nanos = now.timestamp().as_nanosecond().unsigned_abs();
    let mix = (nanos ^ u128::from(std::process::id()).rotate_left(40)) as u64;
    format!(
        "{}-{:06x}",
        now.strftime("%Y%m%d-%H%M%S"),
        mix.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40
    )
}

/// The local time zone, as `TimeZone::system()` finds it, without jiff's walk of the whole
/// zoneinfo folder (600 entries, a third of a millisecond at every start).
fn local_zone() -> jiff::tz::TimeZone {
    zone_of(std::env::var_os("TZ").is_some(), std::path::Path::new("/etc/localtime"))
}

/// When `TZ` is unset, the zone is the one the file `localtime` holds, read as it is; anything
/// else (a `TZ`, no such file, a file that is no zone) is left to jiff.
fn zone_of(tz_set: bool, localtime: &std::path::Path) -> jiff::tz::TimeZone {
    (!tz_set)
        .then(|| crate::safe_io::read_capped(localtime, 1 << 20).ok())
        .flatten()
        .and_then(|bytes| jiff::tz::TimeZone::tzif("localtime", &bytes).ok())
        .unwrap_or_else(jiff::tz::TimeZone::system)
}

/// A stretch of wall time as people read it: `0.4s`, `42s`, `3m05s`, `1h02m`.
pub fn span(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0 => format!("{:.1}s", ms as f64 / 1000.0),
        s if s < 60 => format!("{s}s"),
        s if s < 3_600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3_600, (s % 3_600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `TZif` file (version 2, both blocks) for Paris: no transitions of its own, its rules
    /// in the POSIX footer (made here, so the test needs no tzdata).
    fn paris_tzif() -> Vec<u8> {
        let block = || {
            let mut b = b"TZif".to_vec();
            b.push(b'2');
            b.extend([0; 15]);
            for count in [0u32, 0, 0, 0, 1, 4] {
                b.extend(count.to_be_bytes());
            }
            b.extend(3600i32.to_be_bytes());
            b.extend([0, 0]);
            b.extend(b"CET\0");
            b
        };
        let mut file = block();
        file.extend(block());
        file.extend(b"\nCET-1CEST,M3.5.0,M10.5.0/3\n");
        file
    }

    #[test]
    fn the_local_zone_is_the_one_localtime_holds() {
        let tmp = tempfile::tempdir().unwrap();
        let paris = tmp.path().join("Paris");
        std::fs::write(&paris, paris_tzif()).unwrap();
        let paris = paris.as_path();
        let winter = parse("2026-01-15T12:00:00Z").unwrap();
        let summer = parse("2026-07-15T12:00:00Z").unwrap();
        let zone = zone_of(false, paris);
        assert_eq!(winter.to_zoned(zone.clone()).strftime("%H").to_string(), "13");
        assert_eq!(summer.to_zoned(zone).strftime("%H").to_string(), "14");
        let system = jiff::tz::TimeZone::system();
        for (tz_set, file) in [(true, paris), (false, std::path::Path::new("/nonexistent"))] {
            assert_eq!(
                summer.to_zoned(zone_of(tz_set, file)).offset(),
                summer.to_zoned(system.clone()).offset(),
                "with TZ set, or no file, the zone is the system's as jiff finds it"
            );
        }
    }

    #[test]
    fn spans_read_as_people_say_them() {
        assert_eq!(span(400), "0.4s");
        assert_eq!(span(42_000), "42s");
        assert_eq!(span(185_000), "3m05s");
        assert_eq!(span(3_720_000), "1h02m");
    }

    #[test]
    fn both_resolutions_parse_and_order() {
        let a = parse("2026-11-22T04:28:43Z").unwrap();
        let b = parse("2026-11-22T04:28:43.123Z").unwrap();
        assert!(b > a);
        assert_eq!(format_ts(b), "2026-11-22T04:28:43.123Z");
        assert!(parse("yesterday").is_none());
    }

    #[test]
    fn session_ids_look_like_tilths() {
        let id = new_session_id();
        assert_eq!(id.len(), 22, "{id}");
        assert!(id.as_bytes()[8] == b'-' && id.as_bytes()[15] == b'-', "{id}");
    }
}
