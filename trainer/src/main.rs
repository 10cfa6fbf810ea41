//! `engram-trainer`: command-line entry point (thin: arguments, logging,
//! signals; the work is in the library).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use shared::base::config::Config;
use shared::base::paths::Paths;
use shared::base::shutdown::Shutdown;
use shared::base::time::Ts;
use trainer::evaluate::{self, CanaryOptions};
use trainer::run::{self, RunOptions, RunOutcome};

/// Exit status of `canary` when a model regresses.
const EXIT_REGRESSION: u8 = 3;

#[derive(Parser, Debug)]
#[command(name = "engram-trainer", version, about = "Label sessions, train the predictor behind gates, report")]
struct Cli {
    /// Data home (default: $ENGRAM_HOME, else $XDG_DATA_HOME/engram, else ~/.local/share/engram).
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Score ended sessions, record comparisons, train and promote when due (for cron).
    Run {
        /// Train now even if not due.
        #[arg(long)]
        force: bool,
        /// Start the first model from these weights (an Engram checkpoint).
        #[arg(long, value_name = "PATH")]
        base_weights: Option<PathBuf>,
        /// Log to `logs/trainer.log` in the data home instead of stderr.
        #[arg(long)]
        log_file: bool,
        /// The time stamped on events (RFC 3339 or Unix milliseconds; default: the clock).
        #[arg(long, value_name = "TIME", value_parser = parse_time)]
        now: Option<Ts>,
    },
    /// Replay recorded sessions through the read side and label them (told twice, continuity).
    History {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Evaluate the serving model, a candidate and the baseline on the frozen canary set.
    Canary {
        /// A candidate checkpoint to evaluate too.
        #[arg(long, value_name = "FILE")]
        checkpoint: Option<PathBuf>,
        /// Evaluate on a dataset file (JSON lines of query, memory_ids, labels) instead.
        #[arg(long, value_name = "FILE")]
        dataset: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// The moment whose frozen set is used (RFC 3339 or Unix milliseconds).
        #[arg(long, value_name = "TIME", value_parser = parse_time)]
        now: Option<Ts>,
    },
    /// Evaluate retrieval on a public benchmark.
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Write a self-contained HTML report.
    Report {
        /// Output file.
        #[arg(long, value_name = "FILE")]
        html: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
enum EvalCommand {
    /// LoCoMo: BM25, the baseline, the predictor and the fused ranking, across users and per user.
    Locomo {
        /// The dataset (`locomo10.json` layout), e.g. ../shared/bench/locomo/locomo-dev.json.
        path: PathBuf,
        /// Also write the results as JSON to this file.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Add LoCoMo's observations as memories too (metrics stay at turn level).
        #[arg(long)]
        observations: bool,
        /// Per-user seeds (random halves), at least 3 for the reported figures.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
        seeds: u32,
        /// Test only these conversations (sample ids, comma-separated); the others still train across users.
        #[arg(long, value_delimiter = ',', value_name = "IDS")]
        conversations: Vec<String>,
        /// Do not keep the results in the data home (for the HTML report).
        #[arg(long)]
        no_save: bool,
    },
}

fn parse_time(text: &str) -> Result<Ts, String> {
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(Ts(ms));
    }
    Ts::parse(text).ok_or_else(|| format!("not a time: {text} (use RFC 3339 or Unix milliseconds)"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match real_main(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("engram-trainer: {}", shared::base::hint::error_chain(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

fn real_main(cli: Cli) -> anyhow::Result<ExitCode> {
    let paths = match &cli.home {
        // A mistyped --home must not become a new, empty data home (an
        // evaluation keeps its results in a home of its own, made here).
        Some(home) if !home.is_dir() && !matches!(cli.command, Command::Eval(_)) => {
            eprintln!(
                "engram-trainer: --home {}: no such directory (a data home is made by engram-ingestor; check the path)",
                home.display()
            );
            return Ok(ExitCode::from(2));
        }
        Some(home) => Paths::at(home),
        None => Paths::from_env()?,
    };
    match &cli.command {
        Command::Run { log_file: true, .. } => {
            shared::base::logging::init_file(&paths.logs().join("trainer.log"), "info")
        }
        _ => shared::base::logging::init_stderr("warn"),
    }
    let shutdown = Shutdown::install().context("install signal handlers")?;
    let config = Config::load(&paths.config())?;
    match cli.command {
        Command::Run { force, base_weights, now, .. } => {
            let opts = RunOptions { now, force_train: force, base_weights };
            // Printed, and logged too: a run the hooks start has no terminal.
            let line = match run::run(&paths, &config, &opts, &shutdown)? {
                RunOutcome::Busy { lock } => format!("another engram-trainer run holds {}; exiting", lock.display()),
                RunOutcome::Done(summary) => summary.to_string(),
            };
            tracing::info!("{line}");
            println!("{line}");
            Ok(ExitCode::SUCCESS)
        }
        Command::History { json } => {
            use std::io::IsTerminal as _;
            std::fs::create_dir_all(paths.home()).with_context(|| format!("create {}", paths.home().display()))?;
            let lock_path = paths.trainer_lock();
            let Some(_lock) = shared::base::fsutil::FileLock::try_exclusive(&lock_path)
                .with_context(|| format!("lock {}", lock_path.display()))?
            else {
                println!("another engram-trainer run holds {}; exiting", lock_path.display());
                return Ok(ExitCode::SUCCESS);
            };
            let mut journal = shared::projection::open(&paths, "trainer")?;
            let bar = if std::io::stderr().is_terminal() {
                let pb = indicatif::ProgressBar::new(0);
                if let Ok(style) =
                    indicatif::ProgressStyle::with_template("replaying [{bar:30}] {pos}/{len} moments {elapsed}")
                {
                    pb.set_style(style.progress_chars("=> "));
                }
                pb
            } else {
                indicatif::ProgressBar::hidden()
            };
            let mut progress = |done: u64, total: u64| {
                if done.is_multiple_of(64) || done == total {
                    bar.set_length(total);
                    bar.set_position(done);
                }
            };
            let report = trainer::history::replay(&mut journal, &config, &shutdown, &mut progress)?;
            bar.finish_and_clear();
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("{}", report.render());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Canary { checkpoint, dataset, json, now } => {
            let report = evaluate::canary(&paths, &config, &CanaryOptions { checkpoint, dataset, now })?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("{}", report.render());
            }
            Ok(if report.regressions.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(EXIT_REGRESSION) })
        }
        Command::Eval(EvalCommand::Locomo { path, json, observations, seeds, conversations, no_save }) => {
            use std::io::IsTerminal as _;
            let dataset = trainer::eval::locomo::load(&path)?;
            let opts = trainer::eval::protocol::Options { observations, seeds, conversations };
            let bar = if std::io::stderr().is_terminal() {
                let pb = indicatif::ProgressBar::new(0);
                if let Ok(style) = indicatif::ProgressStyle::with_template("{msg:28} [{bar:30}] {pos}/{len} {elapsed}")
                {
                    pb.set_style(style.progress_chars("=> "));
                }
                pb
            } else {
                indicatif::ProgressBar::hidden()
            };
            let mut progress = |stage: &str, done: u64, total: u64| {
                bar.set_message(stage.to_owned());
                bar.set_length(total);
                bar.set_position(done);
            };
            let report = trainer::eval::protocol::run(&path, &dataset, &config, &opts, &mut progress)?;
            bar.finish_and_clear();
            print!("{}", report.render());
            if let Some(out) = json {
                trainer::eval::write_json(&out, &report)?;
            }
            if !no_save {
                trainer::eval::write_json(&trainer::eval::latest_path(&paths), &report)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Report { html } => {
            trainer::report::write(&paths, &config, &html, Ts::now())?;
            // Where it went, on stderr: stdout carries only requested output.
            let at = std::path::absolute(&html).unwrap_or(html);
            eprintln!("report written to {}", at.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}
