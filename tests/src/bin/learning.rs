//! `learning`: simulated weeks of one user's sessions through the real hooks
//! (`tests::learning`), then the figures that show the predictor learning by
//! itself.
//!
//! ```text
//! cargo run --release -p tests --bin learning -- [--weeks N] [--seed S] [--config TOML]
//! ```
//!
//! Progress (one line a day) goes to stderr, the figures to stdout; exit 1
//! when the simulation fails.

use std::process::ExitCode;

use tests::learning::{Options, run};

const USAGE: &str = "usage: learning [--weeks N] [--seed S] [--config TOML]";

fn main() -> ExitCode {
    let mut opts = Options::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let value = args.next();
        let ok = match (a.as_str(), value) {
            ("--weeks", Some(v)) => v.parse().map(|n| opts.weeks = n).is_ok(),
            ("--seed", Some(v)) => v.parse().map(|n| opts.seed = n).is_ok(),
            ("--config", Some(v)) => {
                opts.config = v.replace("\\n", "\n");
                true
            }
            _ => false,
        };
        if !ok {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    }
    match run(&opts, &mut |line| eprintln!("{line}")) {
        Ok(figures) => {
            print!("{figures}");
            println!("  trainer runs the hooks started (logs/trainer.log):");
            for l in &figures.trainer_lines {
                println!("    {l}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("learning: {e}");
            ExitCode::FAILURE
        }
    }
}
