//! Tape log and projection throughput: appends (fsync per event, batched),
//! sealing, replay into SQLite with FTS indexing, and bytes per event on disk.
//!
//! Run: `cargo bench -p benches --bench tape`. Figures are per event; divan
//! reports the time per iteration and the throughput in items per second.
//! Appends go to a log whose directory and first active segment exist already
//! (made outside the timed part, as for any writer but the very first); the
//! timed part takes the lock, appends, and seals as the options say.

#![allow(clippy::unwrap_used)]

use std::sync::LazyLock;

use benches::session_events;
use shared::base::paths::Paths;
use shared::projection::replay;
use shared::storage::event::Event;
use shared::storage::tape::{TapeLog, TapeOptions};
use tempfile::TempDir;

static EVENTS: LazyLock<Vec<Event>> = LazyLock::new(|| session_events(20_000, 7));
static PAYLOADS: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| EVENTS.iter().map(Event::to_json).collect());

fn main() {
    report_sizes();
    divan::main();
}

/// Bytes per event: raw JSON, active segment, sealed (compressed) segment.
fn report_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), TapeOptions { segment_bytes: u64::MAX, ..TapeOptions::default() }).unwrap();
    let refs: Vec<&[u8]> = PAYLOADS.iter().map(Vec::as_slice).collect();
    let mut w = log.lock().unwrap();
    w.append(&refs).unwrap();
    let info = w.seal().unwrap().unwrap();
    let json: usize = PAYLOADS.iter().map(Vec::len).sum();
    let n = PAYLOADS.len() as f64;
    eprintln!(
        "bytes per event: JSON {:.0}, framed {:.0}, sealed {:.0}; compression {:.2}x over frames, {:.2}x over JSON",
        json as f64 / n,
        info.raw_bytes as f64 / n,
        info.bytes as f64 / n,
        info.raw_bytes as f64 / info.bytes as f64,
        json as f64 / info.bytes as f64
    );
}

/// A new, empty log with its active segment created.
fn new_log(opts: TapeOptions) -> (TempDir, TapeLog) {
    let dir = tempfile::tempdir().unwrap();
    let log = TapeLog::open(dir.path(), opts).unwrap();
    drop(log.lock().unwrap());
    (dir, log)
}

/// Events per batch (one fsync each): 1,000, and the ingestor's flush size
/// (`ingestor::scan::Limits::flush_events`, which also flushes at 16 MiB).
const BATCHES: [usize; 2] = [1_000, 16_384];

/// Appends every bench event in batches of `size`.
fn append_in_batches(log: &TapeLog, size: usize) -> shared::storage::tape::TapeWriter<'_> {
    let mut w = log.lock().unwrap();
    for batch in PAYLOADS.chunks(size) {
        let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
        w.append(&refs).unwrap();
    }
    w
}

/// One fsync per event (each event its own append).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn append_fsync_per_event(bencher: divan::Bencher) {
    const N: usize = 2_000;
    bencher
        .counter(divan::counter::ItemsCount::new(N))
        .with_inputs(|| new_log(TapeOptions::default()))
        .bench_local_values(|(dir, log)| {
            let mut w = log.lock().unwrap();
            for p in &PAYLOADS[..N] {
                w.append(&[p.as_slice()]).unwrap();
            }
            drop(w);
            (dir, log)
        });
}

/// Batches of events, one fsync each, sealing (compression) included: 4 MiB
/// segments are sealed as appends cross the threshold, and the last, partial
/// one at the end, so that every event appended is compressed once, as it
/// is in a log that keeps growing.
#[divan::bench(sample_count = 5, sample_size = 1, args = BATCHES)]
fn append_batched(bencher: divan::Bencher, size: usize) {
    bencher
        .counter(divan::counter::ItemsCount::new(PAYLOADS.len()))
        .with_inputs(|| new_log(TapeOptions::default()))
        .bench_local_values(|(dir, log)| {
            let mut w = append_in_batches(&log, size);
            w.seal().unwrap();
            drop(w);
            (dir, log)
        });
}

/// The same batches without sealing (`auto_seal` off, as hooks append): the
/// append path alone. Sealing is measured by `seal`.
#[divan::bench(sample_count = 5, sample_size = 1, args = BATCHES)]
fn append_batched_unsealed(bencher: divan::Bencher, size: usize) {
    bencher
        .counter(divan::counter::ItemsCount::new(PAYLOADS.len()))
        .with_inputs(|| new_log(TapeOptions { auto_seal: false, ..TapeOptions::default() }))
        .bench_local_values(|(dir, log)| {
            drop(append_in_batches(&log, size));
            (dir, log)
        });
}

/// Sealing every bench event, appended by an earlier session (so read back
/// and verified before compression), into a sealed segment.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn seal(bencher: divan::Bencher) {
    bencher
        .counter(divan::counter::ItemsCount::new(PAYLOADS.len()))
        .with_inputs(|| {
            let (dir, log) = new_log(TapeOptions { auto_seal: false, ..TapeOptions::default() });
            drop(append_in_batches(&log, 1_000));
            (dir, log)
        })
        .bench_local_values(|(dir, log)| {
            log.lock().unwrap().seal().unwrap();
            (dir, log)
        });
}

/// Journal appends (tape + projection with FTS) in batches of 1,000.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn journal_append_batched(bencher: divan::Bencher) {
    bencher
        .counter(divan::counter::ItemsCount::new(EVENTS.len()))
        .with_inputs(|| tempfile::tempdir().unwrap())
        .bench_local_values(|dir| {
            let mut j = shared::projection::open(&Paths::at(dir.path()), "bench").unwrap();
            for batch in EVENTS.chunks(1_000) {
                j.append(batch).unwrap();
            }
            dir
        });
}

/// Rebuild of the projection from sealed tapes, FTS indexing included.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn replay_into_sqlite(bencher: divan::Bencher) {
    bencher
        .counter(divan::counter::ItemsCount::new(EVENTS.len()))
        .with_inputs(|| {
            let dir = tempfile::tempdir().unwrap();
            let log = TapeLog::open(&dir.path().join("tapes"), TapeOptions::default()).unwrap();
            let mut w = log.lock().unwrap();
            for batch in PAYLOADS.chunks(5_000) {
                let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
                w.append(&refs).unwrap();
            }
            w.seal().unwrap();
            dir
        })
        .bench_local_values(|dir| {
            replay(&Paths::at(dir.path()), &mut |_| {}).unwrap();
            dir
        });
}
