//! The ingestor's one error type: every variant says which file, record or
//! value it is about, so a message alone is enough to find the problem.
//!
//! Parsing a harness log does *not* fail on bad records: those become
//! [`crate::adapter::Diagnostic`]s next to the events. An [`Error`] is for what
//! stops a whole unit of work: a directory that cannot be listed, a database
//! that cannot be opened, a resume state written by an incompatible build, an
//! external extractor answer that breaks the contract, a tape log or
//! projection that fails, a memory id that does not exist.

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
    /// A file is larger than what is read of it at once (a SpecStory export
    /// is read whole from its cursor).
    #[error("{path}: {bytes} bytes to read exceed the {limit}-byte limit")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Bytes that would be read.
        bytes: u64,
        /// The limit.
        limit: usize,
    },
    /// The external extractor's answer broke the response contract.
    #[error("extractor answer refused: {reason}")]
    ExtractorResponse {
        /// What was wrong (first problem found).
        reason: String,
    },
    /// The external extractor could not be run, failed or timed out.
    #[error("extractor model {command}: {reason}")]
    Extractor {
        /// The program.
        command: String,
        /// What happened.
        reason: String,
    },
    /// The tape log or the projection failed.
    #[error("{context}: {source}")]
    Engram {
        /// What was being done.
        context: String,
        /// The underlying error (it names the file or table).
        #[source]
        source: shared::base::error::Error,
    },
    /// No memory has this id.
    #[error("no memory with id {id}")]
    UnknownMemory {
        /// The id asked for.
        id: String,
    },
    /// A command-line argument or option value is invalid.
    #[error("{0}")]
    InvalidArgument(String),
    /// The tape log has damaged frames (each was already reported).
    #[error("the tape log is damaged: {problems} problem(s) found")]
    Damaged {
        /// How many.
        problems: usize,
    },
    /// Stopped by SIGINT or SIGTERM before finishing.
    #[error("interrupted")]
    Interrupted,
    /// Writing the requested output failed (a closed pipe is not reported as
    /// an error by the binary).
    #[error("cannot write output: {0}")]
    Output(#[source] std::io::Error),
}

/// How an error ends the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    /// Something failed (IO, database): exit 1.
    Failed,
    /// The request was invalid (unknown id, bad argument): exit 2.
    Invalid,
    /// Data on disk is damaged: exit 3.
    Corrupt,
    /// The reader of our output went away: exit 0, say nothing.
    ClosedPipe,
    /// Stopped by a signal: exit 130.
    Interrupted,
}

impl Error {
    /// Wraps an IO error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), source }
    }

    /// Wraps an error of the tape log or projection with what was being done.
    pub fn engram(context: impl Into<String>, source: shared::base::error::Error) -> Error {
        Error::Engram { context: context.into(), source }
    }

    /// The class deciding the exit code.
    pub fn class(&self) -> ErrorClass {
        use shared::base::error::ErrorClass as Shared;
        match self {
            Error::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ErrorClass::ClosedPipe,
            Error::UnknownMemory { .. } | Error::InvalidArgument(_) => ErrorClass::Invalid,
            Error::Damaged { .. } => ErrorClass::Corrupt,
            Error::Interrupted => ErrorClass::Interrupted,
            Error::Engram { source, .. } => match source.class() {
                Shared::Corrupt => ErrorClass::Corrupt,
                Shared::InvalidInput => ErrorClass::Invalid,
                Shared::Io | Shared::Incompatible => ErrorClass::Failed,
            },
            _ => ErrorClass::Failed,
        }
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self.class() {
            ErrorClass::ClosedPipe => 0,
            ErrorClass::Failed => 1,
            ErrorClass::Invalid => 2,
            ErrorClass::Corrupt => 3,
            ErrorClass::Interrupted => 130,
        }
    }
}

/// Adds context to results of the shared crate.
pub trait EngramContext<T> {
    /// Maps a shared error to [`Error::Engram`] saying what was being done.
    fn context(self, what: &str) -> Result<T, Error>;
}

impl<T> EngramContext<T> for Result<T, shared::base::error::Error> {
    fn context(self, what: &str) -> Result<T, Error> {
        self.map_err(|e| Error::engram(what, e))
    }
}
