//! `scenarios`: plays the scenario benchmark through the real hooks and
//! prints its report (per scenario and overall).
//!
//! ```text
//! cargo run --release -p tests --bin scenarios -- [--filter TEXT]... [--jobs N]
//!     [--dir DIR] [--json] [--verbose] [--check] [--no-turn-settle]
//! ```
//!
//! `--check` exits 1 when a threshold of issues 15 and 17 is not met.
//! Progress goes to stderr, the report to stdout.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use tests::driver::Binaries;
use tests::scenario::report::{Summary, Thresholds, run_all};
use tests::scenario::run::Options;

const USAGE: &str =
    "usage: scenarios [--filter TEXT]... [--jobs N] [--dir DIR] [--json] [--verbose] [--check] [--no-turn-settle]";

fn main() -> ExitCode {
    let mut filters: Vec<String> = Vec::new();
    let mut jobs = 4usize;
    let mut dir = tests::scenario::default_dir();
    let (mut json, mut verbose, mut check) = (false, false, false);
    let mut opts = Options::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| {
            args.next().ok_or_else(|| {
                eprintln!("{name} needs a value\n{USAGE}");
                ExitCode::from(2)
            })
        };
        match a.as_str() {
            "--filter" => match value("--filter") {
                Ok(v) => filters.push(v),
                Err(c) => return c,
            },
            "--jobs" => match value("--jobs").map(|v| v.parse::<usize>()) {
                Ok(Ok(n)) if n > 0 => jobs = n,
                _ => {
                    eprintln!("--jobs takes a positive number\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "--dir" => match value("--dir") {
                Ok(v) => dir = PathBuf::from(v),
                Err(c) => return c,
            },
            "--json" => json = true,
            "--verbose" | "-v" => verbose = true,
            "--check" => check = true,
            "--no-turn-settle" => opts.settle_each_turn = false,
            "--help" | "-h" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("unknown argument {other:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let scenarios = match tests::scenario::load_dir(&dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let chosen: Vec<_> =
        scenarios.into_iter().filter(|s| filters.is_empty() || filters.iter().any(|f| s.name.contains(f))).collect();
    if chosen.is_empty() {
        eprintln!("no scenario matches");
        return ExitCode::from(2);
    }
    eprintln!("building the binaries…");
    let bins = Binaries::built();
    let total = chosen.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let progress = |r: &tests::scenario::report::ScenarioReport| {
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let status = if r.error.is_some() { "could not run" } else { "done" };
        eprintln!("[{n}/{total}] {} {status} ({:.1} s)", r.name, r.wall.as_secs_f64());
    };
    let reports = run_all(&chosen, bins, opts, jobs, &progress);
    let summary = Summary::of(reports);
    let mut out = std::io::stdout().lock();
    let text = if json {
        serde_json::to_string_pretty(&summary.json()).unwrap_or_default() + "\n"
    } else {
        summary.text(verbose)
    };
    if out.write_all(text.as_bytes()).is_err() {
        return ExitCode::FAILURE;
    }
    if check && Thresholds::ISSUES.check(&summary.total).iter().any(|c| !c.pass) {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
