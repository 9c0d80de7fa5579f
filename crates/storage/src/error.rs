//! Errors of the storage engine.

use thiserror::Error;

/// A storage failure. Corruption is distinct from I/O and names the file.
#[derive(Debug, Error)]
pub enum StorageError {
    /// An operating-system I/O error.
    #[error("i/o error on {path}: {source}")]
    Io {
        /// The file or directory involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Stored bytes fail validation (checksum, magic, version, bounds).
    #[error("corrupt {what}: {detail}")]
    Corrupt {
        /// What was being read (file name, block, column).
        what: String,
        /// What was wrong.
        detail: String,
    },
    /// The tenant name cannot be used as a directory name.
    #[error("invalid tenant id: {0}")]
    InvalidTenant(String),
    /// Two different label sets of one tenant hash to the same stream id.
    #[error(
        "stream id collision in tenant {tenant}: {existing} and {incoming} share id {id:016x}"
    )]
    StreamIdCollision {
        /// The tenant.
        tenant: String,
        /// The id both label sets hash to.
        id: u64,
        /// Labels already stored under the id.
        existing: String,
        /// Labels of the rejected push.
        incoming: String,
    },
    /// The write-ahead log failed earlier (for example an fsync error); no
    /// further write can be acknowledged until the store is reopened.
    #[error("write-ahead log unusable after an earlier failure: {0}")]
    WalFailed(String),
    /// Another process (or handle) has the data directory open.
    #[error("data directory {0} is locked by another process")]
    Locked(String),
    /// Writes are refused because flushes cannot keep up (or keep failing).
    #[error("storage overloaded: {0}")]
    Overloaded(String),
    /// The store is shutting down.
    #[error("storage is closed")]
    Closed,
    /// A query passed its deadline.
    #[error("query cancelled")]
    Cancelled,
}

impl StorageError {
    /// Shorthand for a corruption error.
    pub fn corrupt(what: impl Into<String>, detail: impl Into<String>) -> Self {
        StorageError::Corrupt {
            what: what.into(),
            detail: detail.into(),
        }
    }

    /// Shorthand for an I/O error on `path`.
    pub fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Self {
        StorageError::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}

impl From<StorageError> for runakefli_model::BackendError {
    fn from(e: StorageError) -> Self {
        use runakefli_model::BackendError;
        match e {
            StorageError::Io { path, source } => BackendError::Io(std::io::Error::new(
                source.kind(),
                format!("{path}: {source}"),
            )),
            StorageError::Corrupt { .. } => BackendError::Corrupt(e.to_string()),
            StorageError::Cancelled => BackendError::Cancelled,
            other => BackendError::Limit(other.to_string()),
        }
    }
}

/// Result alias of the storage crate.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;
