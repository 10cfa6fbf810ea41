//! `engram-ingestor`: command-line entry point. Parses the command line,
//! starts logging (stderr, `ENGRAM_LOG`), installs signal handling and calls
//! [`ingestor::cli::run`]; an error becomes one line on stderr and an exit
//! code (1 failure, 2 invalid request, 3 damaged data, 130 interrupted; a
//! closed stdout pipe is not an error).

use std::process::ExitCode;

use clap::Parser;
use ingestor::cli::{Cli, Command, HookTarget, run};
use ingestor::error::ErrorClass;
use shared::base::shutdown::Shutdown;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Hooks log to the data home, print nothing and always exit 0.
    match &cli.command {
        Command::Hook { event: HookTarget::Event(e), harness, .. } => {
            ingestor::hook::main_entry(*e, harness.as_deref());
            return ExitCode::SUCCESS;
        }
        Command::Hook { event: HookTarget::Ingest, lane, .. } => {
            ingestor::hook::worker_entry(lane.as_deref());
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    shared::base::logging::init_stderr("warn");
    let shutdown = match Shutdown::install() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("engram-ingestor: cannot install signal handlers: {e}");
            return ExitCode::from(1);
        }
    };
    match run(cli, &shutdown) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if e.class() != ErrorClass::ClosedPipe {
                eprintln!("engram-ingestor: {e}");
            }
            ExitCode::from(e.exit_code())
        }
    }
}
