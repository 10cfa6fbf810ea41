//! The scorer's error type, and how each error becomes a JSON-RPC error.

use std::path::{Path, PathBuf};

use shared::base::rpc::RpcError;

/// Everything a scorer method can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A parameter is wrong; `field` names it (`candidate_features[3]`).
    #[error("{field}: {why}")]
    InvalidParams {
        /// The offending field, with its index where it applies.
        field: String,
        /// What is wrong with it.
        why: String,
    },
    /// The model refused an input (a size, a non-finite value, a range).
    #[error("{0}")]
    Model(#[from] predictor::Error),
    /// Store, journal, checkpoint file or configuration.
    #[error("{0}")]
    Shared(#[from] shared::base::error::Error),
    /// A database given to `train_from_db` could not be read.
    #[error("database {}: {context}: {source}", path.display())]
    Database {
        /// The file.
        path: PathBuf,
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: rusqlite::Error,
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
    /// The request cannot be carried out in the scorer's present state (says why).
    #[error("{0}")]
    Refused(String),
    /// The work was cancelled because the scorer is shutting down.
    #[error("cancelled: the scorer is shutting down")]
    Cancelled,
    /// A handler panicked (the panic was caught; the process keeps serving).
    #[error("the handler panicked: {0}")]
    Panicked(String),
}

/// Result alias of the scorer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::InvalidParams`].
    pub fn params(field: impl Into<String>, why: impl Into<String>) -> Error {
        Error::InvalidParams { field: field.into(), why: why.into() }
    }

    /// An [`Error::Io`].
    pub fn io(op: &'static str, path: &Path, source: std::io::Error) -> Error {
        Error::Io { op, path: path.to_path_buf(), source }
    }

    /// An [`Error::Database`].
    pub fn db(path: &Path, context: impl Into<String>, source: rusqlite::Error) -> Error {
        Error::Database { path: path.to_path_buf(), context: context.into(), source }
    }

    /// Whether the caller's input is at fault (a parameter, or a value the
    /// model refuses: a size, a non-finite number, a range).
    pub fn is_invalid_input(&self) -> bool {
        use predictor::Error as P;
        match self {
            Error::InvalidParams { .. } => true,
            Error::Model(
                P::DimensionMismatch { .. }
                | P::NonFinite { .. }
                | P::OutOfRange { .. }
                | P::EmptyCandidate { .. }
                | P::TokenOutOfRange { .. }
                | P::InvalidSample { .. },
            ) => true,
            Error::Shared(e) => e.class() == shared::base::error::ErrorClass::InvalidInput,
            _ => false,
        }
    }

    /// The JSON-RPC error. Where JSON-RPC fixes the code: -32602 for invalid
    /// params (including values out of range and sizes that do not fit),
    /// -32603 for an internal failure (a handler that panicked). Every other
    /// handler error (a file or database that cannot be read or written, a
    /// checkpoint that does not load, weights that cannot train, shutdown) is
    /// Signet's -32000.
    pub fn to_rpc(&self) -> RpcError {
        if self.is_invalid_input() {
            return RpcError::invalid_params(self);
        }
        match self {
            Error::Panicked(_) => RpcError::internal(self),
            _ => RpcError::server(self),
        }
    }
}
