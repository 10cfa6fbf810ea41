//! Tape log and projection throughput: appends (fsync per event, batched),
//! replay into SQLite with FTS indexing, and bytes per event on disk.
//!
//! Run: `cargo bench -p benches --bench tape`. Figures are per event; divan
//! reports the time per iteration and the throughput in items per second.

#![allow(clippy::unwrap_used)]

use std::sync::LazyLock;

use benches::session_events;
use shared::event::Event;
use shared::journal::{Journal, replay};
use shared::paths::Paths;
use shared::tape::{TapeLog, TapeOptions};

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

/// One fsync per event (each event its own append).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn append_fsync_per_event(bencher: divan::Bencher) {
    const N: usize = 2_000;
    bencher
        .counter(divan::counter::ItemsCount::new(N))
        .with_inputs(|| tempfile::tempdir().unwrap())
        .bench_local_values(|dir| {
            let log = TapeLog::open(dir.path(), TapeOptions::default()).unwrap();
            let mut w = log.lock().unwrap();
            for p in &PAYLOADS[..N] {
                w.append(&[p.as_slice()]).unwrap();
            }
            dir
        });
}

/// Batches of 1,000 events per fsync, sealing (compression) included.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn append_batched(bencher: divan::Bencher) {
    bencher
        .counter(divan::counter::ItemsCount::new(PAYLOADS.len()))
        .with_inputs(|| tempfile::tempdir().unwrap())
        .bench_local_values(|dir| {
            let log = TapeLog::open(dir.path(), TapeOptions::default()).unwrap();
            let mut w = log.lock().unwrap();
            for batch in PAYLOADS.chunks(1_000) {
                let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
                w.append(&refs).unwrap();
            }
            dir
        });
}

/// Journal appends (tape + projection with FTS) in batches of 1,000.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn journal_append_batched(bencher: divan::Bencher) {
    bencher
        .counter(divan::counter::ItemsCount::new(EVENTS.len()))
        .with_inputs(|| tempfile::tempdir().unwrap())
        .bench_local_values(|dir| {
            let mut j = Journal::open(&Paths::at(dir.path()), "bench").unwrap();
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
