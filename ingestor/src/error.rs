//! The ingestor's one error type: every variant says which file, record or
//! value it is about, so a message alone is enough to find the problem.
//!
//! Parsing a harness log does *not* fail on bad records: those become
//! [`crate::adapter::Diagnostic`]s next to the events. An [`Error`] is for what
//! stops a whole unit of work: a directory that cannot be listed, a database
//! that cannot be opened, a resume state written by an incompatible build, an
//! external extractor answer that breaks the contract.

use std::path::PathBuf;

/// Why a unit of ingest work could not be done.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading a file or listing a directory failed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A whole-file log (Gemini legacy JSON, OpenCode storage record) is not
    /// the JSON it should be.
    #[error("{path} is not valid JSON: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
    /// An OpenCode database could not be opened or queried.
    #[error("cannot read OpenCode database {path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: rusqlite::Error,
    },
    /// A stored resume state does not fit this adapter (written by another
    /// build or for another harness). The caller re-reads the file from the
    /// start; derived event ids make that safe.
    #[error("resume state for {harness} file {path} is unreadable: {reason}")]
    ResumeState {
        /// Harness of the adapter.
        harness: &'static str,
        /// The file being resumed.
        path: String,
        /// What did not fit.
        reason: String,
    },
    /// The external extractor's answer broke the response contract.
    #[error("external extractor response rejected: {reason}")]
    ExtractorResponse {
        /// What was wrong (first problem found).
        reason: String,
    },
}

impl Error {
    /// Wraps an IO error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), source }
    }
}
