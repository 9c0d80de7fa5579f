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
    /// further write can be acknowledged until the store is reopened, or, when
    /// the disk was full, until the log heals itself once space frees.
    #[error("write-ahead log unusable after an earlier failure: {reason}{}", disk_full_hint(.disk_full))]
    WalFailed {
        /// The first failure.
        reason: String,
        /// That failure was the file system running out of space.
        disk_full: bool,
    },
    /// A push would make a WAL record larger than replay accepts; it is
    /// refused before anything is written, so every acknowledged record replays.
    #[error("request too large for one write-ahead log record: {bytes} bytes encoded, limit {limit} bytes; send smaller batches")]
    RecordTooLarge {
        /// Encoded size of the record (uncompressed body or compressed frame,
        /// whichever passed the limit).
        bytes: usize,
        /// The limit.
        limit: usize,
    },
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

    /// Whether the failure is (or was caused by) a full file system or an
    /// exhausted disk quota.
    pub fn is_disk_full(&self) -> bool {
        match self {
            StorageError::Io { source, .. } => is_disk_full_io(source),
            StorageError::WalFailed { disk_full, .. } => *disk_full,
            _ => false,
        }
    }
}

/// What a disk-full WAL failure adds to its message.
fn disk_full_hint(disk_full: &bool) -> &'static str {
    if *disk_full {
        " (writes resume by themselves once space frees)"
    } else {
        ""
    }
}

/// Whether an I/O error means "no space left" (`ENOSPC`, `EDQUOT`).
pub fn is_disk_full_io(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::StorageFull
        || matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

impl From<StorageError> for runakefli_model::BackendError {
    /// I/O and corruption keep their kind; an invalid tenant is the caller's
    /// fault (a limit, answered 4xx); everything else is a server-side failure
    /// and travels as an I/O error (answered 5xx), never as a client error.
    fn from(e: StorageError) -> Self {
        use runakefli_model::BackendError;
        match e {
            StorageError::Io { path, source } => BackendError::Io(std::io::Error::new(
                source.kind(),
                format!("{path}: {source}"),
            )),
            StorageError::Corrupt { .. } => BackendError::Corrupt(e.to_string()),
            StorageError::Cancelled => BackendError::Cancelled,
            StorageError::InvalidTenant(_) => BackendError::Limit(e.to_string()),
            other => BackendError::Io(std::io::Error::other(other.to_string())),
        }
    }
}

/// Result alias of the storage crate.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use runakefli_model::BackendError;

    #[test]
    fn only_caller_faults_become_limits() {
        let limit = |e: StorageError| matches!(BackendError::from(e), BackendError::Limit(_));
        assert!(limit(StorageError::InvalidTenant("a/b".into())));
        assert!(!limit(StorageError::Closed));
        assert!(!limit(StorageError::Overloaded("x".into())));
        assert!(!limit(StorageError::Locked("d".into())));
        assert!(!limit(StorageError::WalFailed {
            reason: "x".into(),
            disk_full: false
        }));
        assert!(matches!(
            BackendError::from(StorageError::corrupt("f", "bad")),
            BackendError::Corrupt(_)
        ));
    }

    #[test]
    fn disk_full_is_recognised() {
        let enospc = std::io::Error::from_raw_os_error(libc::ENOSPC);
        assert!(StorageError::io("/d/wal/1.wal", enospc).is_disk_full());
        let eio = std::io::Error::from_raw_os_error(libc::EIO);
        assert!(!StorageError::io("/d", eio).is_disk_full());
        assert!(StorageError::WalFailed {
            reason: "x".into(),
            disk_full: true
        }
        .is_disk_full());
    }
}
