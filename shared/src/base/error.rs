//! The error type of the shared crate: what failed, where, and of which class.

use std::path::{Path, PathBuf};

/// Broad classes, for exit codes and for deciding whether to retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    /// Data on disk is damaged or not ours.
    Corrupt,
    /// The operating system refused (disk full, permissions, …).
    Io,
    /// The caller asked for something invalid.
    InvalidInput,
    /// The database was written by a newer Engram.
    Incompatible,
}

/// Errors of the shared infrastructure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file operation failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What was being done (`open`, `append to`, …).
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file's content is damaged.
    #[error("corrupt {} at byte {offset}: {reason}", file.display())]
    Corrupt {
        /// The damaged file.
        file: PathBuf,
        /// Byte offset of the damage (in the file, or in a chunk's decompressed bytes where stated).
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A SQLite operation failed.
    #[error("database: {context}: {source}")]
    Sqlite {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: rusqlite::Error,
    },
    /// The database schema is newer than this binary understands.
    #[error(
        "the database {} has schema version {found}, but this engram supports up to {supported}; upgrade engram (or run `engram-ingestor replay` with the newer binary)",
        path.display()
    )]
    SchemaTooNew {
        /// The database.
        path: PathBuf,
        /// Version recorded in the database.
        found: u32,
        /// Newest version this binary knows.
        supported: u32,
    },
    /// Invalid request or argument.
    #[error("{0}")]
    InvalidInput(String),
}

impl Error {
    /// Which class the error is.
    pub fn class(&self) -> ErrorClass {
        match self {
            Error::Io { .. } | Error::Sqlite { .. } => ErrorClass::Io,
            Error::Corrupt { .. } => ErrorClass::Corrupt,
            Error::SchemaTooNew { .. } => ErrorClass::Incompatible,
            Error::InvalidInput(_) => ErrorClass::InvalidInput,
        }
    }

    /// Builds an [`Error::Io`].
    pub fn io(op: &'static str, path: &Path, source: std::io::Error) -> Error {
        Error::Io { op, path: path.to_path_buf(), source }
    }

    /// Builds an [`Error::Corrupt`].
    pub fn corrupt(file: &Path, offset: u64, reason: impl Into<String>) -> Error {
        Error::Corrupt { file: file.to_path_buf(), offset, reason: reason.into() }
    }

    /// Builds an [`Error::Sqlite`].
    pub fn sqlite(context: impl Into<String>, source: rusqlite::Error) -> Error {
        Error::Sqlite { context: context.into(), source }
    }
}

/// Result alias for the shared crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Adds file context to `std::io::Result`s.
pub trait IoContext<T> {
    /// Maps an IO error to [`Error::Io`] naming the operation and path.
    fn ctx(self, op: &'static str, path: &Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, op: &'static str, path: &Path) -> Result<T> {
        self.map_err(|e| Error::io(op, path, e))
    }
}

/// Adds context to `rusqlite::Result`s.
pub trait SqlContext<T> {
    /// Maps a SQLite error to [`Error::Sqlite`] with `context`.
    fn sql(self, context: &str) -> Result<T>;
}

impl<T> SqlContext<T> for rusqlite::Result<T> {
    fn sql(self, context: &str) -> Result<T> {
        self.map_err(|e| Error::sqlite(context, e))
    }
}
