//! Timestamps: milliseconds since the Unix epoch, with RFC 3339 text forms.
//!
//! Events carry the time they describe as a [`Ts`]. The projection never reads
//! the clock; only writers call [`Ts::now`].

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Milliseconds since 1970-01-01T00:00:00Z (UTC).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ts(pub i64);

const MS_PER_DAY: i64 = 86_400_000;

/// The environment variable that sets the clock of every Engram process (see [`Ts::now`]).
pub const CLOCK_ENV: &str = "ENGRAM_NOW";

impl Ts {
    /// The current time. Writers only: never call this from a projection.
    ///
    /// The wall clock, unless [`CLOCK_ENV`] (`ENGRAM_NOW`) sets it: then the
    /// process's clock starts at that instant (RFC 3339 or Unix milliseconds)
    /// the first time it is read and runs from there at the wall clock's
    /// pace. Simulations of weeks of use set it for every hook they run, and
    /// the processes those hooks start inherit it.
    pub fn now() -> Ts {
        static OFFSET: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
        let wall = Ts::wall();
        let offset = *OFFSET.get_or_init(|| {
            std::env::var(CLOCK_ENV).ok().and_then(|v| Ts::parse_clock(&v)).map_or(0, |start| start.0 - wall.0)
        });
        Ts(wall.0.saturating_add(offset))
    }

    /// The wall clock, whatever [`CLOCK_ENV`] says.
    pub fn wall() -> Ts {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => Ts(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
            Err(e) => Ts(-i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX)),
        }
    }

    /// A clock setting: Unix milliseconds or RFC 3339.
    pub fn parse_clock(text: &str) -> Option<Ts> {
        let text = text.trim();
        text.parse::<i64>().ok().map(Ts).or_else(|| Ts::parse(text))
    }

    /// Whole milliseconds since the epoch.
    pub fn millis(self) -> i64 {
        self.0
    }

    /// Fractional days from `self` to `later` (negative if `later` is earlier).
    pub fn days_until(self, later: Ts) -> f64 {
        (later.0 - self.0) as f64 / MS_PER_DAY as f64
    }

    /// The UTC calendar date of this instant: (year, month 1–12, day 1–31).
    pub fn civil_date(self) -> (i32, u32, u32) {
        let (y, m, d) = civil_from_days(self.0.div_euclid(MS_PER_DAY));
        (i32::try_from(y).unwrap_or(if y < 0 { i32::MIN } else { i32::MAX }), m, d)
    }

    /// Adds a number of milliseconds.
    pub fn plus_millis(self, ms: i64) -> Ts {
        Ts(self.0.saturating_add(ms))
    }

    /// `YYYY-MM-DDThh:mm:ss.sssZ`, the form stored in SQLite `TEXT` time columns.
    /// Lexicographic order equals time order for years 0000..=9999.
    pub fn to_rfc3339(self) -> String {
        let days = self.0.div_euclid(MS_PER_DAY);
        let ms_of_day = self.0.rem_euclid(MS_PER_DAY);
        let (y, m, d) = civil_from_days(days);
        let h = ms_of_day / 3_600_000;
        let mi = (ms_of_day / 60_000) % 60;
        let s = (ms_of_day / 1000) % 60;
        let ms = ms_of_day % 1000;
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
    }

    /// Parses RFC 3339 / ISO 8601 timestamps as harnesses write them:
    /// `2025-09-03T00:52:35.576Z`, `2025-09-03T00:52:35+02:00`, `2025-09-03 00:52:35`
    /// (taken as UTC), or a bare date. Returns `None` for anything else.
    pub fn parse(text: &str) -> Option<Ts> {
        let text = text.trim();
        if let Ok(ts) = text.parse::<jiff::Timestamp>() {
            return Some(Ts(ts.as_millisecond()));
        }
        // No offset: interpret as UTC civil time.
        if let Ok(dt) = text.parse::<jiff::civil::DateTime>() {
            let zoned = dt.to_zoned(jiff::tz::TimeZone::UTC).ok()?;
            return Some(Ts(zoned.timestamp().as_millisecond()));
        }
        if let Ok(date) = text.parse::<jiff::civil::Date>() {
            let zoned = date.to_zoned(jiff::tz::TimeZone::UTC).ok()?;
            return Some(Ts(zoned.timestamp().as_millisecond()));
        }
        None
    }

    /// Builds a timestamp from a UTC civil date and time.
    pub fn from_civil(year: i32, month: u32, day: u32, hour: u32, minute: u32, second: u32) -> Ts {
        let days = days_from_civil(i64::from(year), month, day);
        Ts(days * MS_PER_DAY + i64::from(hour) * 3_600_000 + i64::from(minute) * 60_000 + i64::from(second) * 1000)
    }

    /// Local calendar position of this instant in `tz`, for session-level model signals.
    pub fn local_parts(self, tz: &jiff::tz::TimeZone) -> LocalParts {
        let Ok(ts) = jiff::Timestamp::from_millisecond(self.0) else {
            return LocalParts::default();
        };
        let z = ts.to_zoned(tz.clone());
        LocalParts {
            hour: f32::from(z.hour() as u8) + f32::from(z.minute() as u8) / 60.0 + f32::from(z.second() as u8) / 3600.0,
            weekday: z.weekday().to_monday_zero_offset() as u8,
            month0: (z.month() - 1) as u8,
        }
    }
}

/// Where an instant falls in a local calendar.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LocalParts {
    /// Fractional hour of day, 0.0..24.0.
    pub hour: f32,
    /// Day of week, Monday = 0.
    pub weekday: u8,
    /// Month of year, January = 0.
    pub month0: u8,
}

impl fmt::Display for Ts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

/// Days since 1970-01-01 to (year, month, day); Howard Hinnant's algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// (year, month, day) to days since 1970-01-01; inverse of [`civil_from_days`].
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(Ts(0).to_rfc3339(), "1970-01-01T00:00:00.000Z");
        assert_eq!(Ts(1_756_860_755_576).to_rfc3339(), "2025-09-03T00:52:35.576Z");
        assert_eq!(Ts(-1).to_rfc3339(), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn parses_harness_forms() {
        assert_eq!(Ts::parse("2025-09-03T00:52:35.576Z"), Some(Ts(1_756_860_755_576)));
        assert_eq!(Ts::parse("2025-09-03T02:52:35.576+02:00"), Some(Ts(1_756_860_755_576)));
        assert_eq!(Ts::parse("2025-09-03 00:52:35.576"), Some(Ts(1_756_860_755_576)));
        assert_eq!(Ts::parse("2025-09-03"), Some(Ts::from_civil(2025, 9, 3, 0, 0, 0)));
        assert_eq!(Ts::parse("yesterday"), None);
    }

    #[test]
    fn local_parts_in_utc() {
        let p = Ts::from_civil(2026, 2, 25, 18, 30, 0).local_parts(&jiff::tz::TimeZone::UTC);
        assert_eq!(p.weekday, 2); // Wednesday
        assert_eq!(p.month0, 1);
        assert!((p.hour - 18.5).abs() < 1e-4);
    }

    proptest! {
        #[test]
        fn rfc3339_round_trips(ms in -62_000_000_000_000i64..250_000_000_000_000i64) {
            let ts = Ts(ms);
            prop_assert_eq!(Ts::parse(&ts.to_rfc3339()), Some(ts));
        }

        #[test]
        fn civil_days_round_trip(days in -1_000_000i64..1_000_000i64) {
            let (y, m, d) = civil_from_days(days);
            prop_assert_eq!(days_from_civil(y, m, d), days);
        }

        #[test]
        fn civil_date_is_the_date_from_civil_was_given(days in -700_000i64..700_000i64, ms in 0i64..MS_PER_DAY) {
            let (y, m, d) = civil_from_days(days);
            let ts = Ts::from_civil(y as i32, m, d, 0, 0, 0).plus_millis(ms);
            prop_assert_eq!(ts.civil_date(), (y as i32, m, d));
        }
    }
}
