//! `realdata`: the real-data extraction benchmark. Lays the labelled corpus
//! of real sessions out as a new user's home, runs the real
//! `engram-ingestor scan` over it, and scores the memories it keeps against
//! the labels (`tests::realdata`).
//!
//! ```text
//! cargo run --release -p tests --bin realdata -- [--corpus DIR] [--ingestor PATH]
//!     [--keep DIR] [--json] [--verbose] [--check]
//! ```
//!
//! `--corpus` defaults to `../shared/realdata` (or `$ENGRAM_SHARED_DIR/realdata`);
//! `--ingestor` to `engram-ingestor` built in this binary's profile;
//! `--keep DIR` runs in DIR (new or empty) and leaves it for inspection.
//! `--check` exits 1 when a floor (`FLOORS`) is not met. Progress goes to
//! stderr, the report to stdout.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use tests::realdata::report::FLOORS;

const USAGE: &str = "usage: realdata [--corpus DIR] [--ingestor PATH] [--keep DIR] [--json] [--verbose] [--check]";

fn main() -> ExitCode {
    let (mut corpus, mut ingestor, mut keep): (Option<PathBuf>, Option<PathBuf>, Option<PathBuf>) = (None, None, None);
    let (mut json, mut verbose, mut check) = (false, false, false);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let slot = match a.as_str() {
            "--corpus" => &mut corpus,
            "--ingestor" => &mut ingestor,
            "--keep" => &mut keep,
            "--json" => {
                json = true;
                continue;
            }
            "--verbose" | "-v" => {
                verbose = true;
                continue;
            }
            "--check" => {
                check = true;
                continue;
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("unknown argument {other:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        };
        match args.next() {
            Some(v) => *slot = Some(PathBuf::from(v)),
            None => {
                eprintln!("{a} needs a value\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(corpus) = corpus.or_else(tests::realdata::default_corpus) else {
        eprintln!("error: no corpus (give --corpus DIR)");
        return ExitCode::from(2);
    };
    let corpus = std::fs::canonicalize(&corpus).unwrap_or(corpus);
    if let Some(dir) = &keep {
        let empty = std::fs::read_dir(dir).map(|mut d| d.next().is_none()).unwrap_or(true);
        if !empty {
            eprintln!("error: --keep {} is not empty", dir.display());
            return ExitCode::from(2);
        }
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("error: {}: {e}", dir.display());
            return ExitCode::from(2);
        }
    }
    let ingestor = ingestor.unwrap_or_else(|| {
        eprintln!("building engram-ingestor…");
        tests::build_bin("ingestor", "engram-ingestor")
    });
    eprintln!("scanning {} with {}…", corpus.display(), ingestor.display());
    let report = match tests::realdata::benchmark(&corpus, &ingestor, keep.as_deref(), &FLOORS) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(dir) = &keep {
        eprintln!("the home is kept in {} (ENGRAM_HOME={}/engram)", dir.display(), dir.display());
    }
    let text = if json {
        serde_json::to_string_pretty(&report.json()).unwrap_or_default() + "\n"
    } else {
        report.text(verbose)
    };
    if std::io::stdout().lock().write_all(text.as_bytes()).is_err() {
        return ExitCode::FAILURE;
    }
    if check && !report.passes() {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
