//! Latency samples: `logs/latency.jsonl` in the data home, one JSON object per
//! line, `{"ts":1767225600000,"op":"hook.user-prompt-submit","us":8123}`
//! (`"ok":false` when the operation failed).
//!
//! Writers are short-lived processes on an agent's critical path (hooks), so
//! a process notes its samples in memory ([`note`]) and writes them all with
//! one `O_APPEND` write, unsynced, when it is done ([`flush`]); concurrent
//! writers' lines do not interleave (each is one small append). When the file
//! passes [`MAX_BYTES`] the writer that notices renames it to
//! `latency.1.jsonl` (the one older generation kept), so the pair never holds
//! more than about 2 MiB (some 30,000 samples). Losing samples (a crash, two
//! rotations racing) is acceptable: this is telemetry, not state.
//!
//! Operations: `hook.<event>` (a whole hook process's work, from reading its
//! input to its output: every hook, through [`crate::domain::hook::guarded`]) and
//! `score.<trigger>` (the ranking pipeline inside a read-side hook).

use std::fs::{self, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::base::paths::Paths;
use crate::base::time::Ts;

/// The file samples are appended to, in `logs/`.
pub const FILE: &str = "latency.jsonl";
/// The previous generation of [`FILE`].
pub const ROTATED: &str = "latency.1.jsonl";
/// Size past which [`FILE`] is rotated.
pub const MAX_BYTES: u64 = 1 << 20;

/// Upper bounds (ms) of the histogram buckets; the last bucket is open.
pub const BUCKETS_MS: [f64; 11] = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0];

/// One timed operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// When it ended (ms since the epoch).
    pub ts: i64,
    /// What was timed (`hook.session-start`, `score.prompt`, …).
    pub op: String,
    /// How long it took, in microseconds.
    pub us: u64,
    /// Whether it succeeded.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub ok: bool,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

static NOTED: Mutex<Vec<Sample>> = Mutex::new(Vec::new());

/// Notes a sample of this process, written by the next [`flush`].
pub fn note(op: impl Into<String>, took: Duration, ok: bool) {
    let sample = Sample { ts: Ts::now().0, op: op.into(), us: took.as_micros().min(u128::from(u64::MAX)) as u64, ok };
    if let Ok(mut noted) = NOTED.lock() {
        noted.push(sample);
    }
}

/// Appends the samples noted so far to the data home's file. Failures are
/// logged at debug level only: telemetry never fails the work it measures.
pub fn flush(paths: &Paths) {
    let samples = match NOTED.lock() {
        Ok(mut noted) => std::mem::take(&mut *noted),
        Err(_) => return,
    };
    if let Err(e) = append(&paths.logs(), &samples) {
        tracing::debug!(error = %e, "cannot record latency samples");
    }
}

/// Appends `samples` to `dir/latency.jsonl` in one write, rotating it first
/// when it is over [`MAX_BYTES`].
pub fn append(dir: &Path, samples: &[Sample]) -> io::Result<()> {
    if samples.is_empty() {
        return Ok(());
    }
    let mut buf = Vec::with_capacity(80 * samples.len());
    for s in samples {
        serde_json::to_writer(&mut buf, s).map_err(io::Error::other)?;
        buf.push(b'\n');
    }
    let file = dir.join(FILE);
    match fs::metadata(&file) {
        Ok(m) if m.len() > MAX_BYTES => fs::rename(&file, dir.join(ROTATED))?,
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir_all(dir)?,
        Err(e) => return Err(e),
    }
    OpenOptions::new().create(true).append(true).open(&file)?.write_all(&buf)
}

/// The files holding samples, oldest first.
pub fn files(paths: &Paths) -> [PathBuf; 2] {
    [paths.logs().join(ROTATED), paths.logs().join(FILE)]
}

/// Every readable sample that ended at or after `since_ms`, oldest first
/// (unreadable lines, such as a torn last line, are skipped).
pub fn read(paths: &Paths, since_ms: i64) -> Vec<Sample> {
    let mut out = Vec::new();
    for file in files(paths) {
        let Ok(text) = fs::read_to_string(&file) else { continue };
        out.extend(text.lines().filter_map(|l| serde_json::from_str::<Sample>(l).ok()).filter(|s| s.ts >= since_ms));
    }
    out.sort_by_key(|s| s.ts);
    out
}

/// The distribution of one operation's latencies.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// The operation.
    pub op: String,
    /// Samples.
    pub count: usize,
    /// Failed ones.
    pub failures: usize,
    /// Median, ms.
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Slowest, ms.
    pub max_ms: f64,
    /// The latest sample, ms.
    pub last_ms: f64,
    /// Counts per bucket of [`BUCKETS_MS`] (one more: slower than the last bound).
    pub histogram: Vec<u64>,
    /// The latest samples (at most 60), oldest first: `[ts, ms]`.
    pub recent: Vec<(i64, f64)>,
}

/// The nearest-rank percentile `p` (0..=100) of sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One summary per operation, by name.
pub fn summarize(samples: &[Sample]) -> Vec<Summary> {
    let mut by_op: std::collections::BTreeMap<&str, Vec<&Sample>> = std::collections::BTreeMap::new();
    for s in samples {
        by_op.entry(s.op.as_str()).or_default().push(s);
    }
    by_op
        .into_iter()
        .map(|(op, list)| {
            let ms = |s: &Sample| s.us as f64 / 1000.0;
            let mut sorted: Vec<f64> = list.iter().map(|s| ms(s)).collect();
            sorted.sort_by(f64::total_cmp);
            let mut histogram = vec![0u64; BUCKETS_MS.len() + 1];
            for v in &sorted {
                histogram[BUCKETS_MS.iter().position(|b| v <= b).unwrap_or(BUCKETS_MS.len())] += 1;
            }
            Summary {
                op: op.to_owned(),
                count: list.len(),
                failures: list.iter().filter(|s| !s.ok).count(),
                p50_ms: percentile(&sorted, 50.0),
                p95_ms: percentile(&sorted, 95.0),
                p99_ms: percentile(&sorted, 99.0),
                max_ms: sorted.last().copied().unwrap_or(0.0),
                last_ms: list.last().map_or(0.0, |s| ms(s)),
                histogram,
                recent: list[list.len().saturating_sub(60)..].iter().map(|s| (s.ts, ms(s))).collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sample(ts: i64, op: &str, us: u64) -> Sample {
        Sample { ts, op: op.into(), us, ok: true }
    }

    #[test]
    fn samples_round_trip_and_rotate() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        append(&paths.logs(), &[sample(1, "hook.stop", 1500), sample(2, "score.prompt", 700)]).unwrap();
        let text = fs::read_to_string(paths.logs().join(FILE)).unwrap();
        assert_eq!(text.lines().next().unwrap(), r#"{"ts":1,"op":"hook.stop","us":1500}"#);
        // A torn line is skipped; rotation keeps the older generation readable.
        OpenOptions::new().append(true).open(paths.logs().join(FILE)).unwrap().write_all(b"{\"ts\":3,").unwrap();
        let big = vec![sample(4, "hook.stop", 1); 40_000];
        append(&paths.logs(), &big).unwrap();
        append(&paths.logs(), &[sample(5, "hook.stop", 9)]).unwrap();
        assert!(paths.logs().join(ROTATED).exists());
        let all = read(&paths, 0);
        // The torn line swallows the first sample written after it.
        assert_eq!(all.len(), 2 + 39_999 + 1);
        assert_eq!(read(&paths, 5), vec![sample(5, "hook.stop", 9)]);
    }

    #[test]
    fn summaries_give_nearest_rank_percentiles_and_buckets() {
        let samples: Vec<Sample> = (1..=100).map(|i| sample(i, "score.prompt", i as u64 * 1000)).collect();
        let s = &summarize(&samples)[0];
        assert_eq!((s.count, s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms), (100, 50.0, 95.0, 99.0, 100.0));
        assert_eq!(s.histogram.iter().sum::<u64>(), 100);
        assert_eq!(s.histogram[0], 1, "≤ 1 ms");
        assert_eq!(s.histogram[6], 50, "50 < ms ≤ 100");
        assert_eq!(s.recent.len(), 60);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn noted_samples_are_flushed_once() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::at(dir.path());
        note("hook.test", Duration::from_micros(2500), false);
        flush(&paths);
        flush(&paths);
        let all = read(&paths, 0);
        assert_eq!(all.len(), 1);
        assert_eq!((all[0].op.as_str(), all[0].us, all[0].ok), ("hook.test", 2500, false));
    }
}
