//! Graceful shutdown on SIGTERM / SIGINT: a flag long-running work checks
//! between batches, requests and epochs; a second Ctrl-C exits at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;

/// A shared "please stop" flag.
#[derive(Clone, Debug, Default)]
pub struct Shutdown {
    flag: Arc<AtomicBool>,
}

impl Shutdown {
    /// A flag set by SIGTERM or SIGINT. A second signal while the flag is set
    /// terminates the process immediately (exit code 130).
    pub fn install() -> std::io::Result<Shutdown> {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [SIGTERM, SIGINT] {
            // Order matters: the conditional exit sees the flag set by the first signal.
            flag::register_conditional_shutdown(sig, 130, Arc::clone(&flag))?;
            flag::register(sig, Arc::clone(&flag))?;
        }
        Ok(Shutdown { flag })
    }

    /// A flag not connected to signals (tests, libraries).
    pub fn manual() -> Shutdown {
        Shutdown::default()
    }

    /// Whether shutdown was requested.
    pub fn requested(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Requests shutdown.
    pub fn request(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    /// The underlying flag, for APIs that take one.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }
}
