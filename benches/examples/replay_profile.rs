//! Times replay in isolation, for profiling:
//! `replay_profile prepare DIR [N]` writes N events of session content as tapes,
//! `replay_profile replay DIR` rebuilds the projection and prints wall and CPU time.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Instant;

use shared::base::paths::Paths;
use shared::projection::replay;
use shared::storage::event::Event;
use shared::storage::tape::{TapeLog, TapeOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(2).map_or("/tmp/replay-profile", String::as_str));
    match args.get(1).map(String::as_str) {
        Some("prepare") => {
            let n: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(50_000);
            let _ = std::fs::remove_dir_all(&dir);
            let events = benches::session_events(n, 7);
            let log = TapeLog::open(&dir.join("tapes"), TapeOptions::default()).unwrap();
            let mut w = log.lock().unwrap();
            for batch in events.chunks(5_000) {
                let payloads: Vec<Vec<u8>> = batch.iter().map(Event::to_json).collect();
                let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
                w.append(&refs).unwrap();
            }
            w.seal().unwrap();
        }
        _ => {
            let t = Instant::now();
            let c = cpu();
            let report = replay(&Paths::at(&dir), &mut |_| {}).unwrap();
            let (wall, cpu_s) = (t.elapsed().as_secs_f64(), cpu() - c);
            let n = report.events as f64;
            eprintln!(
                "replay of {n} events: wall {:.0} ms ({:.0}/s), cpu {:.0} ms ({:.0}/s)",
                wall * 1e3,
                n / wall,
                cpu_s * 1e3,
                n / cpu_s
            );
        }
    }
}

/// CPU time of this thread (seconds), from /proc/thread-self/schedstat.
fn cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse::<f64>().ok()))
        .unwrap_or(0.0)
        / 1e9
}
