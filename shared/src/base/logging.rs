//! Logging setup: tracing to stderr (quiet by default), or to a file for hooks.
//!
//! The filter comes from `ENGRAM_LOG` (e.g. `ENGRAM_LOG=debug` or
//! `ENGRAM_LOG=shared=trace,info`). Stdout is never used: it carries only a
//! protocol or the requested output.

use std::fs::OpenOptions;
use std::path::Path;
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// The environment variable holding the log filter.
pub const LOG_ENV: &str = "ENGRAM_LOG";

fn filter(default: &str) -> EnvFilter {
    EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new(default))
}

/// Whether log lines on stderr may carry colour codes: only when stderr is a
/// terminal and `NO_COLOR` is unset (a daemon that reads our stderr through a
/// pipe logs it verbatim).
pub fn stderr_colours() -> bool {
    use std::io::IsTerminal as _;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Logs to stderr at `default` level unless `ENGRAM_LOG` says otherwise.
/// Calling it twice is harmless.
pub fn init_stderr(default: &str) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter(default))
        .with_writer(std::io::stderr)
        .with_ansi(stderr_colours())
        .with_target(false)
        .compact()
        .try_init();
}

/// Logs to `file` (appended; its directory is created), for processes whose
/// stderr nobody reads, such as hooks. Falls back to stderr if the file cannot
/// be opened.
pub fn init_file(file: &Path, default: &str) {
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    match OpenOptions::new().create(true).append(true).open(file) {
        Ok(f) => {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter(default))
                .with_writer(Mutex::new(f))
                .with_ansi(false)
                .try_init();
        }
        Err(_) => init_stderr(default),
    }
}

/// The message of a caught panic's payload (`&str` or `String`), for logs and errors.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
}
