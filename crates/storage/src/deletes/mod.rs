//! Delete requests (Loki's `/loki/api/v1/delete`): a stream selector, line
//! filters and a time range whose rows are hidden from every scan at once
//! and purged from disk once the request's cancellation period has passed.
//!
//! - **Hiding.** Scans drop deleted rows where rows leave the store
//!   (`runakefli-storage-query`: `backend.rs`, `column_scan.rs`, reading
//!   [`crate::Snapshot::deletes`]); plans that could see a deleted row are
//!   declined (its `exec/mod.rs`), so the engine falls back to the filtered
//!   scan.
//! - **Purging.** Once a request is due (created more than the cancel period
//!   ago), merges leave its rows out of their output, and the maintenance
//!   thread flushes the memtable and rewrites every partition holding rows
//!   it deletes ([`crate::merge::rewrite_parts`]); the request is then
//!   `processed`. Processed requests still hide rows (a late push into the
//!   range stays hidden until the next merge drops it).
//! - **Persistence.** Each tenant's requests are one file, `deletes`
//!   ([`file`]), replaced atomically on every change.
//! - **Cancelling** is possible until the request is due; the rows come back.
//!
//! The request types and the server's seam ([`runakefli_model::Deletes`])
//! are the model's (`runakefli_model::deletes`), shared with the other
//! backends; this module is how the embedded store carries them out.

pub mod api;
pub mod file;

pub use runakefli_model::deletes::{DeleteRequest, DeleteStatus, LineFilter, LineTest};

use runakefli_model::{Labels, StreamId};
use std::sync::Arc;

/// The requests that apply to one stream in one scan.
#[derive(Clone, Debug, Default)]
pub struct StreamDeletes(Vec<Arc<DeleteRequest>>);

impl StreamDeletes {
    /// The requests of `all` touching a stream with `labels` in `[lo, hi]`.
    pub fn for_stream(all: &[Arc<DeleteRequest>], labels: &Labels, lo: i64, hi: i64) -> Self {
        StreamDeletes(
            all.iter()
                .filter(|r| r.touches(labels, lo, hi))
                .cloned()
                .collect(),
        )
    }

    /// True when no request applies.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a row is deleted by any of the requests.
    pub fn deletes(&self, ts: i64, line: &str) -> bool {
        self.0.iter().any(|r| r.deletes(ts, line))
    }
}

/// The merge filter of due requests: rows they delete are left out of a
/// rewritten part.
pub struct PurgeFilter<'a> {
    /// Due requests of the partition's tenant.
    pub requests: &'a [Arc<DeleteRequest>],
    /// Labels of the tenant's streams (from the stream index).
    pub labels: &'a dyn Fn(StreamId) -> Option<Arc<Labels>>,
    /// The partition's day range, inclusive ns.
    pub range: (i64, i64),
    /// Per stream, the requests that apply (filled lazily).
    pub cache: std::cell::RefCell<std::collections::HashMap<StreamId, StreamDeletes>>,
}

impl PurgeFilter<'_> {
    /// The requests that apply to stream `sid` in the partition's range.
    pub fn of(&self, sid: StreamId) -> StreamDeletes {
        self.cache
            .borrow_mut()
            .entry(sid)
            .or_insert_with(|| match (self.labels)(sid) {
                Some(l) => StreamDeletes::for_stream(self.requests, &l, self.range.0, self.range.1),
                None => StreamDeletes::default(),
            })
            .clone()
    }
}
