//! Provenance on the 100 MB corpus ([`benches::claude_corpus`]: 108 copies
//! of the three Claude Code `ccv-*` fixtures, every UUID replaced per copy):
//! cold scan with the evidence index (MB/s), disk (tapes + database against
//! the corpus), a rescan with nothing new, replay (events/s).
//!
//! Run by hand: `cargo bench -p benches --bench provenance`. Environment:
//! `ENGRAM_BENCH_COPIES` (default 108), `ENGRAM_BENCH_DIR` (where the corpus
//! and the data home go; default a temporary directory; a corpus already
//! built there with the same number of copies is reused),
//! `ENGRAM_SHARED_DIR`.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use ingestor::discover::Roots;
use ingestor::scan::{self, ScanOptions};
use shared::config::Config;
use shared::paths::Paths;
use shared::shutdown::Shutdown;
use shared::time::Ts;

fn main() {
    let Some(fixtures) = shared::testing::shared_data("fixtures") else {
        return;
    };
    let copies: usize = std::env::var("ENGRAM_BENCH_COPIES").ok().and_then(|v| v.parse().ok()).unwrap_or(108);
    let tmp = tempfile::tempdir().unwrap();
    let base = std::env::var_os("ENGRAM_BENCH_DIR").map_or_else(|| tmp.path().to_path_buf(), PathBuf::from);
    let corpus_dir = base.join(format!("ccv-corpus-{copies}"));
    let marker = corpus_dir.join(".built");
    let t = Instant::now();
    let (root, bytes, files) = match std::fs::read_to_string(&marker) {
        Ok(text) => {
            let mut it = text.split_whitespace();
            let bytes: u64 = it.next().and_then(|x| x.parse().ok()).unwrap();
            let files: usize = it.next().and_then(|x| x.parse().ok()).unwrap();
            (corpus_dir.join("claude/projects"), bytes, files)
        }
        Err(_) => {
            let _ = std::fs::remove_dir_all(&corpus_dir);
            let c = benches::claude_corpus::build(&fixtures, &corpus_dir, copies).unwrap();
            std::fs::write(&marker, format!("{} {}", c.bytes, c.files.len())).unwrap();
            (c.root, c.bytes, c.files.len())
        }
    };
    let mb = bytes as f64 / 1e6;
    eprintln!(
        "corpus: {copies} copies, {files} files, {mb:.1} MB ({:.1} s to build or find)",
        t.elapsed().as_secs_f64()
    );

    let home = base.join("home");
    let _ = std::fs::remove_dir_all(&home);
    let paths = Paths::at(&home);
    let roots = Roots { claude: vec![root.clone()], codex: vec![], gemini: vec![], opencode: vec![] };
    let mut opts = ScanOptions::new(Ts::now());
    opts.roots = Some(roots);
    let t = Instant::now();
    let summary = scan::run(&paths, &Config::default(), &opts, &Shutdown::manual(), &mut |_| {}).unwrap();
    let cold = t.elapsed().as_secs_f64();
    let events = summary.events_appended;
    let (tapes, db) = (dir_bytes(&home.join("tapes")), dir_bytes(&home.join("db")));
    eprintln!(
        "engram scan (cold, evidence index included): {cold:.2} s, {:.1} MB/s, {events} events; \
         disk: tapes {:.1} MB + database {:.1} MB = {:.2}x the corpus",
        mb / cold,
        tapes as f64 / 1e6,
        db as f64 / 1e6,
        (tapes + db) as f64 / bytes as f64
    );
    let mut rescans = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let again = scan::run(&paths, &Config::default(), &opts, &Shutdown::manual(), &mut |_| {}).unwrap();
        rescans.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(again.events_appended, 0);
    }
    eprintln!("rescan with nothing new: median {:.1} ms of {rescans:.1?}", median(&mut rescans));

    let t = Instant::now();
    let report = shared::journal::replay(&paths, &mut |_| {}).unwrap();
    let secs = t.elapsed().as_secs_f64();
    eprintln!(
        "replay: {} events in {secs:.2} s, {:.0} events/s; database {:.1} MB",
        report.events,
        report.events as f64 / secs,
        dir_bytes(&home.join("db")) as f64 / 1e6
    );
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .map(|e| {
            let m = e.metadata().unwrap();
            if m.is_dir() { dir_bytes(&e.path()) } else { m.len() }
        })
        .sum()
}
