//! Test support: locating the read-only `../shared` data (fixtures, LoCoMo).
//!
//! Tests that need `../shared` run in CI always and skip locally when it is
//! missing: [`shared_data`] returns `None` after printing why, unless the `CI`
//! environment variable is set, in which case a missing directory is a failure.

use std::path::PathBuf;

/// The path of `relative` inside the shared data directory (`$ENGRAM_SHARED_DIR`,
/// else `../shared` next to the workspace). `None` (with a message on stderr)
/// when it does not exist locally; panics when it does not exist under `CI`.
pub fn shared_data(relative: &str) -> Option<PathBuf> {
    let base = match std::env::var_os("ENGRAM_SHARED_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    };
    let path = base.join(relative);
    if path.exists() {
        return Some(path);
    }
    if std::env::var_os("CI").is_some() {
        panic!("CI is set but the shared test data {} is missing", path.display());
    }
    eprintln!("skipping: shared test data {} not found (set ENGRAM_SHARED_DIR)", path.display());
    None
}
