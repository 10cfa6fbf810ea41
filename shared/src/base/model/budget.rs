//! The limits around model calls, kept in the data home's `model/`:
//!
//! - **A daily budget per use** (`daily_calls`): `usage.json` counts the
//!   calls of the current day (UTC) by use (`extractor`, `summary`,
//!   `dedup`, `curation`); a call is counted before it is made (a call
//!   that crashed was still paid for), under `usage.lock`.
//! - **One call at a time per data home** (seed 000's single-flight
//!   extraction): `call.lock`, held for the length of a call or of a run of
//!   calls. A background caller that cannot have it leaves its work for later.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::base::fsutil::{self, FileLock};
use crate::base::paths::Paths;
use crate::base::time::Ts;

/// What the ledger file holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Ledger {
    /// The day counted (`YYYY-MM-DD`, UTC).
    day: String,
    /// Calls that day, by use.
    calls: BTreeMap<String, u32>,
}

fn dir(paths: &Paths) -> PathBuf {
    paths.home().join("model")
}

/// The ledger file.
pub fn ledger_file(paths: &Paths) -> PathBuf {
    dir(paths).join("usage.json")
}

/// The single-flight lock.
pub fn call_lock_file(paths: &Paths) -> PathBuf {
    dir(paths).join("call.lock")
}

fn day(now: Ts) -> String {
    let (y, m, d) = now.civil_date();
    format!("{y:04}-{m:02}-{d:02}")
}

fn read(paths: &Paths, now: Ts) -> Ledger {
    let today = day(now);
    let ledger: Ledger =
        std::fs::read(ledger_file(paths)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
    if ledger.day == today { ledger } else { Ledger { day: today, calls: BTreeMap::new() } }
}

/// The daily budget of a use is spent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the {limit} calls a day of {purpose} are used up (UTC day {day}); raise {purpose}.daily_calls or wait")]
pub struct Exhausted {
    /// The use.
    pub purpose: String,
    /// Its budget.
    pub limit: u32,
    /// The day.
    pub day: String,
}

/// Counts one call of `purpose` today if fewer than `limit` were made;
/// returns the calls made today with this one. An unreadable ledger starts
/// the day again; a ledger that cannot be written is an error (no call is
/// made that cannot be counted).
pub fn reserve(paths: &Paths, purpose: &str, limit: u32, now: Ts) -> Result<u32, ReserveError> {
    let lock_path = dir(paths).join("usage.lock");
    std::fs::create_dir_all(dir(paths)).map_err(|e| ReserveError::Io(format!("{}: {e}", dir(paths).display())))?;
    let _lock =
        FileLock::exclusive(&lock_path).map_err(|e| ReserveError::Io(format!("{}: {e}", lock_path.display())))?;
    let mut ledger = read(paths, now);
    let used = ledger.calls.get(purpose).copied().unwrap_or(0);
    if used >= limit {
        return Err(ReserveError::Exhausted(Exhausted { purpose: purpose.to_owned(), limit, day: ledger.day }));
    }
    ledger.calls.insert(purpose.to_owned(), used + 1);
    let bytes = serde_json::to_vec(&ledger).map_err(|e| ReserveError::Io(e.to_string()))?;
    let path = ledger_file(paths);
    fsutil::atomic_write(&path, &bytes).map_err(|e| ReserveError::Io(format!("{}: {e}", path.display())))?;
    Ok(used + 1)
}

/// Calls of `purpose` made today.
pub fn used(paths: &Paths, purpose: &str, now: Ts) -> u32 {
    read(paths, now).calls.get(purpose).copied().unwrap_or(0)
}

/// Why a call could not be counted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReserveError {
    /// The budget is spent.
    #[error(transparent)]
    Exhausted(#[from] Exhausted),
    /// The ledger could not be read or written.
    #[error("cannot count the call: {0}")]
    Io(String),
}

/// Takes the data home's single-flight lock, waiting up to `wait` for it;
/// `Ok(None)` when another process still holds it.
pub fn single_flight(paths: &Paths, wait: Duration) -> std::io::Result<Option<FileLock>> {
    let path = call_lock_file(paths);
    std::fs::create_dir_all(dir(paths))?;
    let deadline = Instant::now() + wait;
    loop {
        if let Some(lock) = FileLock::try_exclusive(&path)? {
            return Ok(Some(lock));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(50).min(deadline.saturating_duration_since(Instant::now())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_counts_each_use_per_day() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        let day1 = Ts::from_civil(2026, 3, 4, 23, 0, 0);
        assert_eq!(reserve(&paths, "extractor", 2, day1), Ok(1));
        assert_eq!(reserve(&paths, "extractor", 2, day1), Ok(2));
        let err = reserve(&paths, "extractor", 2, day1).unwrap_err();
        assert!(err.to_string().contains("extractor.daily_calls"), "{err}");
        assert_eq!(reserve(&paths, "summary", 1, day1), Ok(1), "each use has its own count");
        assert_eq!(used(&paths, "extractor", day1), 2);
        let day2 = Ts::from_civil(2026, 3, 5, 0, 30, 0);
        assert_eq!(used(&paths, "extractor", day2), 0);
        assert_eq!(reserve(&paths, "extractor", 2, day2), Ok(1), "a new day, a new budget");
        std::fs::write(ledger_file(&paths), b"garbage").unwrap();
        assert_eq!(reserve(&paths, "extractor", 2, day2), Ok(1), "an unreadable ledger starts the day again");
    }

    #[test]
    fn one_call_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        let held = single_flight(&paths, Duration::ZERO).unwrap().expect("free");
        let start = Instant::now();
        assert!(single_flight(&paths, Duration::from_millis(200)).unwrap().is_none());
        assert!(start.elapsed() >= Duration::from_millis(200));
        drop(held);
        assert!(single_flight(&paths, Duration::ZERO).unwrap().is_some());
    }
}
