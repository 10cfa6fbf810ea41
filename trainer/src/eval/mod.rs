//! Offline evaluations of retrieval quality on public benchmarks
//! (`engram-trainer eval`): today LoCoMo, baseline against learned.
//!
//! The latest results are kept in the data home (`evals/locomo.json`) for the
//! HTML report's chart.

pub mod locomo;
pub mod metrics;
pub mod protocol;

use std::path::{Path, PathBuf};

use shared::base::paths::Paths;

use crate::error::{Error, Result};

/// Where the latest LoCoMo results are kept in a data home.
pub fn latest_path(paths: &Paths) -> PathBuf {
    paths.home().join("evals").join("locomo.json")
}

/// Writes a report atomically to `path` (pretty JSON, newline-terminated).
pub fn write_json(path: &Path, report: &protocol::Report) -> Result<()> {
    let mut text = serde_json::to_string_pretty(report)
        .map_err(|e| Error::InvalidInput(format!("serialise the evaluation report: {e}")))?;
    text.push('\n');
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
    }
    shared::base::fsutil::atomic_write(path, text.as_bytes()).map_err(|e| Error::io("write", path, e))
}

/// Reads the latest LoCoMo results of a data home, if any (a damaged file reads as none, logged).
pub fn read_latest(paths: &Paths) -> Option<serde_json::Value> {
    let path = latest_path(paths);
    let bytes = std::fs::read(&path).ok()?;
    match serde_json::from_slice(&bytes) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "the latest evaluation results cannot be read");
            None
        }
    }
}
