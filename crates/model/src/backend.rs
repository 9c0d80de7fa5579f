//! The contract between the query engine and a storage backend.
//!
//! The embedded columnar store implements [`Backend`]; a ClickHouse backend will be
//! another implementation. The engine never sees files, parts or blocks.

use crate::{Entry, Labels, Matcher, StreamId, TenantId, Timestamp};
use std::sync::Arc;
use thiserror::Error;

/// Failure inside a backend.
#[derive(Debug, Error)]
pub enum BackendError {
    /// Reading or writing failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// Stored data is damaged; the message names the file.
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// The request exceeds a configured limit.
    #[error("{0}")]
    Limit(String),
    /// The query was cancelled or timed out.
    #[error("query cancelled")]
    Cancelled,
}

/// Order of entries within a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Direction {
    /// Oldest first.
    Forward,
    /// Newest first (Loki's default).
    #[default]
    Backward,
}

/// A stream known to the backend.
#[derive(Clone, Debug)]
pub struct StreamInfo {
    /// The stream's id within its tenant.
    pub id: StreamId,
    /// The stream's labels.
    pub labels: Arc<Labels>,
}

/// What a scan reads: the matching streams' entries in `[start, end)`.
#[derive(Clone, Debug)]
pub struct ScanRequest {
    /// Whose data.
    pub tenant: TenantId,
    /// Stream selector; every matcher must hold.
    pub matchers: Vec<Matcher>,
    /// Inclusive start, nanoseconds.
    pub start: Timestamp,
    /// Exclusive end, nanoseconds.
    pub end: Timestamp,
    /// Order of entries within each stream.
    pub direction: Direction,
    /// Substrings that every wanted line contains (case-sensitive). A hint the
    /// backend may use to skip blocks via its token indexes; the engine still
    /// checks every line it receives.
    pub required_substrings: Vec<String>,
}

/// Entries of one stream, in the scan's direction.
#[derive(Clone, Debug, Default)]
pub struct EntryBatch {
    /// The entries, ordered by timestamp in the scan's direction; entries with equal
    /// timestamps keep push order (reversed when scanning backward).
    pub entries: Vec<Entry>,
}

/// What the scan callback wants next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanControl {
    /// Keep sending batches.
    Continue,
    /// Send no more batches of the current stream; go on with the next.
    NextStream,
    /// End the scan.
    Stop,
}

/// A storage backend as the query engine sees it.
pub trait Backend: Send + Sync {
    /// Streams whose labels satisfy all `matchers` and that may have entries in
    /// `[start, end)`.
    fn streams(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<StreamInfo>, BackendError>;

    /// Label names of streams with data in `[start, end)`, sorted.
    fn label_names(&self, tenant: &TenantId, start: Timestamp, end: Timestamp) -> Result<Vec<String>, BackendError>;

    /// Values of `name` over streams matching `matchers` with data in `[start, end)`, sorted.
    fn label_values(
        &self,
        tenant: &TenantId,
        name: &str,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<String>, BackendError>;

    /// Reads the entries of every matching stream. Each stream's batches arrive
    /// consecutively and in order; streams come in no particular order. `visit`
    /// steers the scan with its return value.
    fn scan(
        &self,
        request: &ScanRequest,
        visit: &mut dyn FnMut(&StreamInfo, EntryBatch) -> ScanControl,
    ) -> Result<(), BackendError>;
}
