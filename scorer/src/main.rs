//! `engram-scorer`: command-line entry point (the logic lives in the library).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use scorer::ServeOptions;
use shared::shutdown::Shutdown;

/// Engram's scorer: the predictor sidecar and the ranking service.
#[derive(Debug, Parser)]
#[command(name = "engram-scorer", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Embedding size accepted by `score` and `train` (Signet's flag; also accepted without `serve`).
    #[arg(long, global = true)]
    native_dim: Option<usize>,
    /// Checkpoint to serve at start when it exists (Signet's flag).
    #[arg(long, global = true)]
    checkpoint: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve JSON-RPC 2.0 on stdin/stdout, one object per line (the default).
    Serve,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    shared::logging::init_stderr("warn");
    let shutdown = match Shutdown::install() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("engram-scorer: cannot install signal handlers: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            let mut opts = ServeOptions::from_env();
            if let Some(n) = cli.native_dim {
                opts.native_dim = n;
            }
            opts.checkpoint = cli.checkpoint;
            match scorer::run(opts, shutdown) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("engram-scorer: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
