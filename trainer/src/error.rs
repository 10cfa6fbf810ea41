//! The trainer library's error type: what failed and where, by class.

use std::path::{Path, PathBuf};

/// Errors of the trainer library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The tape log, the projection, model files or configuration (shared crate).
    #[error(transparent)]
    Shared(#[from] shared::base::error::Error),
    /// A SQLite query of the trainer failed.
    #[error("database: {context}: {source}")]
    Sqlite {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: rusqlite::Error,
    },
    /// The predictor refused its input (training, scoring, checkpoints).
    #[error("predictor: {context}: {source}")]
    Predictor {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: predictor::Error,
    },
    /// A file operation failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A line of an evaluation dataset is not valid.
    #[error("dataset {}: line {line}: {reason}", path.display())]
    Dataset {
        /// The dataset file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The caller asked for something invalid.
    #[error("{0}")]
    InvalidInput(String),
}

impl Error {
    /// Builds an [`Error::Io`].
    pub fn io(op: &'static str, path: &Path, source: std::io::Error) -> Error {
        Error::Io { op, path: path.to_path_buf(), source }
    }

    /// Builds an [`Error::Predictor`].
    pub fn predictor(context: impl Into<String>, source: predictor::Error) -> Error {
        Error::Predictor { context: context.into(), source }
    }
}

/// Result alias of the trainer library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Adds context to `rusqlite` results.
pub(crate) trait Sql<T> {
    /// Maps a SQLite error to [`Error::Sqlite`] with `context`.
    fn sql(self, context: &str) -> Result<T>;
}

impl<T> Sql<T> for rusqlite::Result<T> {
    fn sql(self, context: &str) -> Result<T> {
        self.map_err(|source| Error::Sqlite { context: context.to_owned(), source })
    }
}
