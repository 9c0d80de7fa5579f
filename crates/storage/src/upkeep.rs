//! What the store's upkeep (retention, purging delete requests, the delete
//! API) needs of the store, as a narrow trait: those modules work on any
//! [`Upkeep`] and never see the store's internals (`storage.rs` implements
//! it), so they import nothing that imports them back.

use crate::config::StorageConfig;
use crate::memtable::Memtable;
use crate::partition::Tenant;
use crate::stats::Counters;
use crate::StorageError;
use parking_lot::Mutex;
use runakefli_model::TenantId;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The store as retention and delete requests see it.
pub(crate) trait Upkeep {
    /// The store's configuration.
    fn config(&self) -> &StorageConfig;
    /// Every tenant, in no particular order.
    fn tenants(&self) -> Vec<Arc<Tenant>>;
    /// Tenant `id`, when it has data.
    fn tenant(&self, id: &TenantId) -> Option<Arc<Tenant>>;
    /// Tenant `id`, created (with its directory) when new.
    fn tenant_or_create(&self, id: &TenantId) -> Result<Arc<Tenant>, StorageError>;
    /// Raised while the store shuts down (long rewrites stop early).
    fn shutdown(&self) -> &AtomicBool;
    /// The store's counters.
    fn counters(&self) -> &Counters;
    /// The memtables queries see (active and frozen).
    fn memtables(&self) -> Vec<Arc<Memtable>>;
    /// Held by flushes: whoever removes partitions holds it too.
    fn flush_lock(&self) -> &Mutex<()>;
    /// Writes the memtables to parts.
    fn flush(&self) -> Result<(), StorageError>;
    /// Bytes the store takes on disk (parts, WAL and indexes).
    fn disk_bytes(&self) -> u64;
}
