//! A test backend over [`MemBackend`] that counts what a query reads: the
//! entries handed out (on both scan paths) and the columnar scans started.

use crate::testing::MemBackend;
use runakefli_model::{
    Backend, BackendError, ColumnBatch, ColumnRequest, EntryBatch, Matcher, ScanControl,
    ScanRequest, StreamInfo, TenantId, Timestamp,
};
use std::sync::atomic::{AtomicU64, Ordering};

/// [`MemBackend`] with counters.
pub(super) struct Counting {
    pub inner: MemBackend,
    /// Entries (or column rows) handed to the engine.
    pub entries: AtomicU64,
    /// Calls of [`Backend::scan_columns`].
    pub column_scans: AtomicU64,
}

impl Counting {
    pub fn new(inner: MemBackend) -> Self {
        Counting {
            inner,
            entries: AtomicU64::new(0),
            column_scans: AtomicU64::new(0),
        }
    }
}

impl Backend for Counting {
    fn streams(
        &self,
        t: &TenantId,
        m: &[Matcher],
        a: Timestamp,
        b: Timestamp,
    ) -> Result<Vec<StreamInfo>, BackendError> {
        self.inner.streams(t, m, a, b)
    }
    fn label_names(
        &self,
        t: &TenantId,
        a: Timestamp,
        b: Timestamp,
    ) -> Result<Vec<String>, BackendError> {
        self.inner.label_names(t, a, b)
    }
    fn label_values(
        &self,
        t: &TenantId,
        n: &str,
        m: &[Matcher],
        a: Timestamp,
        b: Timestamp,
    ) -> Result<Vec<String>, BackendError> {
        self.inner.label_values(t, n, m, a, b)
    }
    fn scan(
        &self,
        r: &ScanRequest,
        visit: &mut dyn FnMut(&StreamInfo, EntryBatch) -> ScanControl,
    ) -> Result<(), BackendError> {
        self.inner.scan(r, &mut |info, batch| {
            self.entries
                .fetch_add(batch.entries.len() as u64, Ordering::Relaxed);
            visit(info, batch)
        })
    }
    fn scan_columns(
        &self,
        r: &ScanRequest,
        columns: &ColumnRequest,
        visit: &mut dyn FnMut(&StreamInfo, ColumnBatch) -> ScanControl,
    ) -> Result<(), BackendError> {
        self.column_scans.fetch_add(1, Ordering::Relaxed);
        self.inner.scan_columns(r, columns, &mut |info, batch| {
            self.entries
                .fetch_add(batch.rows.len() as u64, Ordering::Relaxed);
            visit(info, batch)
        })
    }
}
