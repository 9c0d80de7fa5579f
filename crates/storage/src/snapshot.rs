//! [`Snapshot`]: what one read of a tenant and time range sees, and the
//! store's one read rule.
//!
//! **The read rule: memtables first, then parts.** A flush moves rows from
//! a frozen memtable into a part and then drops the memtable; a reader that
//! took the part list first and the memtables after could miss rows that
//! moved in between. Taking the memtables first (the active one and the
//! frozen one, when a flush runs), then the part lists of the day partitions
//! in range, sees every row at least once: a row may be seen twice (in the
//! frozen memtable and in its new part) and readers remove such duplicates
//! (the merged scan does). [`Snapshot::take`] is the only place that
//! applies the rule; `Storage::snapshot` hands its result to readers.
//!
//! The stream index is read live ([`Snapshot::index`]) after the parts:
//! it only grows between retention passes, so a stream in any snapshotted
//! source is in it. Delete requests are taken with the parts.

use crate::deletes::DeleteRequest;
use crate::memtable::Memtable;
use crate::names;
use crate::part::Part;
use crate::partition::Tenant;
use crate::stream_index::StreamIndex;
use runakefli_model::{Entry, Labels, Matcher, StreamId, TenantId};
use std::sync::Arc;

/// The sources of one read of one tenant over an inclusive time range:
/// memtables (oldest first), the parts of the day partitions in range, the
/// stream index and the delete requests. Cheap to take (reference counts);
/// the parts stay readable (their files kept) while it lives.
pub struct Snapshot {
    tenant: Arc<Tenant>,
    lo: i64,
    hi: i64,
    memtables: Vec<Arc<Memtable>>,
    parts: Vec<Arc<Part>>,
    deletes: Vec<Arc<DeleteRequest>>,
}

impl Snapshot {
    /// Applies the read rule: `memtables` (oldest first) were taken by the
    /// caller before this call; the parts of `tenant`'s partitions over days
    /// `lo..=hi` (ns) are taken now, then its delete requests.
    pub(crate) fn take(
        tenant: Arc<Tenant>,
        memtables: Vec<Arc<Memtable>>,
        lo: i64,
        hi: i64,
    ) -> Snapshot {
        let parts: Vec<Arc<Part>> = {
            let ps = tenant.partitions.read();
            ps.range(names::day_of(lo)..=names::day_of(hi))
                .flat_map(|(_, p)| p.state.read().parts.clone())
                .collect()
        };
        let deletes = tenant.deletes.read().clone();
        Snapshot {
            tenant,
            lo,
            hi,
            memtables,
            parts,
            deletes,
        }
    }

    /// The tenant read.
    pub fn tenant(&self) -> &TenantId {
        &self.tenant.id
    }

    /// The time range read, inclusive nanoseconds.
    pub fn range(&self) -> (i64, i64) {
        (self.lo, self.hi)
    }

    /// The memtables, oldest first (the frozen one, when a flush runs, then
    /// the active one). They are the live memtables: rows appended after the
    /// snapshot may be seen too.
    pub fn memtables(&self) -> &[Arc<Memtable>] {
        &self.memtables
    }

    /// The parts of the day partitions in range, by day, each day's in its
    /// partition's order.
    pub fn parts(&self) -> &[Arc<Part>] {
        &self.parts
    }

    /// The tenant's delete requests (hidden rows).
    pub fn deletes(&self) -> &[Arc<DeleteRequest>] {
        &self.deletes
    }

    /// The tenant's stream index, read-locked (hold it briefly).
    pub fn index(&self) -> parking_lot::RwLockReadGuard<'_, StreamIndex> {
        self.tenant.index.read()
    }

    /// The streams matching `matchers` with data in range, sorted by id.
    pub fn matching(&self, matchers: &[Matcher]) -> Vec<(StreamId, Arc<Labels>)> {
        self.index().matching(matchers, self.lo, self.hi)
    }

    /// The label names of streams with data in range.
    pub fn label_names(&self) -> Vec<String> {
        self.index().label_names(self.lo, self.hi)
    }

    /// Stream `sid`'s memtable rows in `lo..=hi`, per memtable holding any
    /// (oldest memtable first, each in push order).
    pub fn memory_entries(&self, sid: StreamId, lo: i64, hi: i64) -> Vec<Vec<Entry>> {
        self.memtables
            .iter()
            .map(|m| m.entries_in(&self.tenant.id, sid, lo, hi))
            .filter(|e| !e.is_empty())
            .collect()
    }
}
