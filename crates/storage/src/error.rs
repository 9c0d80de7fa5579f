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
}

impl StorageError {
    /// Shorthand for a corruption error.
    pub fn corrupt(what: impl Into<String>, detail: impl Into<String>) -> Self {
        StorageError::Corrupt { what: what.into(), detail: detail.into() }
    }
}
