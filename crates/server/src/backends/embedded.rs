//! The embedded columnar store (`runakefli_storage`) as the server's backend:
//! its settings from the server's, the [`Store`] over it, its metric
//! families (WAL, memtable, parts, merges, retention, disk) and its files
//! for the admin endpoints.

use crate::config::ServerConfig;
use crate::metrics::{BackendMetrics, Exposition};
use crate::open_error::OpenError;
use crate::store::{LocalFiles, Store};
use runakefli_storage::{Storage, StorageConfig};
use runakefli_storage_query::{EmbeddedBackend, QueryConfig};
use std::sync::Arc;
use std::time::Duration;

/// Opens the store under `config.data_dir`, replaying its WAL.
pub(super) fn open(config: &ServerConfig) -> Result<Store, OpenError> {
    let mut sc = StorageConfig::new(config.data_dir.clone());
    sc.retention = super::retention_config(config)?;
    sc.delete_cancel_period = config.delete_request_cancel_period;
    sc.memtable_flush_bytes = config.memtable_bytes;
    sc.flush_interval = config.flush_interval.max(Duration::from_millis(100));
    sc.wal_fsync = config.wal_fsync;
    sc.wal_segment_max_bytes = config.wal_segment_bytes.max(1);
    sc.wal_record_max_bytes = config.wal_record_max_bytes;
    let query = QueryConfig {
        answer_cache_bytes: config.answer_cache_bytes,
        decoded_cache_bytes: config.decoded_cache_bytes,
    };
    let storage = Storage::open(sc).map_err(|e| OpenError::Backend(Box::new(e)))?;
    Ok(store(Arc::new(EmbeddedBackend::new(storage, &query))))
}

/// The [`Store`] over an opened store: it reads through `backend` (the
/// executor and its caches), writes, deletes, shows its figures on
/// `/metrics` and its files to the admin endpoints through the store.
pub fn store(backend: Arc<EmbeddedBackend>) -> Store {
    let storage = backend.storage().clone();
    Store::from_parts(backend, storage.clone(), storage.clone())
        .with_deletes(storage.clone())
        .with_metrics(Arc::new(Figures(storage.clone())))
        .with_local_files(Arc::new(Files(storage)))
}

/// The store's files, for `/ready` and `/admin/storage/stats`.
struct Files(Arc<Storage>);

impl LocalFiles for Files {
    fn free_disk_bytes(&self) -> std::io::Result<u64> {
        self.0.free_disk_bytes()
    }

    fn stats_json(&self) -> Result<String, String> {
        serde_json::to_string(&self.0.stats()).map_err(|e| e.to_string())
    }
}

/// The store's figures, read at scrape time.
struct Figures(Arc<Storage>);

impl BackendMetrics for Figures {
    fn render(&self, x: &mut Exposition) {
        render(x, &self.0);
    }
}

/// Writes the WAL, memtable, part, merge and disk families.
fn render(x: &mut Exposition, storage: &Storage) {
    let s = storage.stats();
    let tenants = storage.tenant_stats();
    x.counter(
        "runakefli_wal_written_bytes_total",
        "Bytes of records written to the write-ahead log since start.",
        s.wal_bytes_written as f64,
    );
    x.counter(
        "runakefli_wal_recoveries_total",
        "Times the write-ahead log accepted appends again after a full disk.",
        s.wal_recoveries as f64,
    );
    x.gauge(
        "runakefli_wal_torn_tails",
        "Write-ahead log segments whose torn tail (a record cut short at the end) was cut when the store opened.",
        s.wal_torn_tails as f64,
    );
    x.gauge(
        "runakefli_wal_disk_bytes",
        "Bytes of write-ahead log segments on disk.",
        s.wal_disk_bytes as f64,
    );
    x.family(
        "runakefli_wal_fsync_duration_seconds",
        "histogram",
        "Duration of the write-ahead log's group-commit fdatasync calls.",
    );
    x.histogram(&[], &storage.wal_fsync_seconds());
    x.gauge(
        "runakefli_memtable_bytes",
        "Approximate bytes held in memtables (active and being flushed).",
        s.memtable_bytes as f64,
    );
    x.gauge(
        "runakefli_memtable_rows",
        "Entries held in memtables (active and being flushed).",
        s.memtable_rows as f64,
    );
    x.counter(
        "runakefli_flushes_total",
        "Memtable flushes that wrote parts.",
        s.flushes as f64,
    );
    x.counter(
        "runakefli_flushed_rows_total",
        "Entries written to parts by flushes.",
        s.flushed_rows as f64,
    );
    x.counter(
        "runakefli_merges_total",
        "Completed part merges.",
        s.merges_done as f64,
    );
    x.counter(
        "runakefli_merged_rows_total",
        "Rows written by merges.",
        s.merged_rows as f64,
    );
    x.gauge(
        "runakefli_merges_running",
        "Merges running now.",
        s.merges_running as f64,
    );
    x.gauge(
        "runakefli_merge_backlog_partitions",
        "Partitions the merge policy would merge now or once idle.",
        s.merge_backlog as f64,
    );
    x.counter(
        "runakefli_background_errors_total",
        "Background flush, merge or retention failures.",
        s.background_errors as f64,
    );
    x.gauge(
        "runakefli_quarantined_files",
        "Files moved or copied to quarantine/ since the store opened.",
        s.quarantined_files as f64,
    );
    x.counter(
        "runakefli_damaged_blocks_total",
        "Blocks of parts found damaged when read (skipped; the part is kept in quarantine).",
        s.damaged_blocks as f64,
    );
    x.counter(
        "runakefli_retention_runs_total",
        "Retention passes run.",
        s.retention_runs as f64,
    );
    x.counter(
        "runakefli_retention_dropped_partitions_total",
        "Day partitions retention dropped whole (by age or disk budget).",
        s.retention_dropped_partitions as f64,
    );
    x.counter(
        "runakefli_retention_rewritten_partitions_total",
        "Day partitions retention rewrote without expired streams.",
        s.retention_rewritten_partitions as f64,
    );
    x.counter(
        "runakefli_retention_removed_rows_total",
        "Stored rows retention removed.",
        s.retention_removed_rows as f64,
    );
    x.counter(
        "runakefli_retention_freed_bytes_total",
        "Bytes of part files retention gave up.",
        s.retention_freed_bytes as f64,
    );
    x.counter(
        "runakefli_deleted_rows_total",
        "Stored rows purged from disk by delete requests.",
        s.deleted_rows as f64,
    );
    x.gauge(
        "runakefli_pending_delete_requests",
        "Delete requests not yet purged (their rows are hidden already).",
        s.pending_deletes as f64,
    );
    x.gauge(
        "runakefli_disk_bytes",
        "Bytes on disk: parts, write-ahead log and indexes.",
        s.disk_bytes as f64,
    );
    let per_tenant = [
        (
            "runakefli_tenant_disk_bytes",
            "Bytes of a tenant's files on disk (parts, indexes; the shared WAL excluded).",
        ),
        ("runakefli_tenant_parts", "Live parts of a tenant."),
        (
            "runakefli_tenant_part_rows",
            "Rows in a tenant's live parts.",
        ),
        ("runakefli_tenant_partitions", "Day partitions of a tenant."),
        ("runakefli_tenant_streams", "Streams of a tenant."),
    ];
    for (i, (name, help)) in per_tenant.iter().enumerate() {
        x.family(name, "gauge", help);
        for t in &tenants {
            let v = [t.disk_bytes, t.parts, t.part_rows, t.partitions, t.streams][i];
            x.sample("", &[("tenant", &t.tenant)], v as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::error::ApiError;
    use runakefli_storage::StorageError as S;

    /// The status a store failure answers with, through the model's kinds.
    fn status(e: S) -> u16 {
        ApiError::from(runakefli_model::StoreError::from(e)).status
    }

    #[test]
    fn storage_failures_map_to_one_status_each() {
        assert_eq!(status(S::InvalidTenant("a/b".into())), 400);
        assert_eq!(
            status(S::StreamIdCollision {
                tenant: "t".into(),
                id: 7,
                existing: "{a=\"1\"}".into(),
                incoming: "{a=\"2\"}".into(),
            }),
            400
        );
        assert_eq!(
            status(S::RecordTooLarge {
                bytes: 10,
                limit: 5
            }),
            413
        );
        assert_eq!(status(S::Overloaded("behind".into())), 503);
        assert_eq!(status(S::Closed), 503);
        assert_eq!(
            status(S::WalFailed {
                reason: "fsync: EIO".into(),
                disk_full: false
            }),
            503
        );
        assert_eq!(
            status(S::WalFailed {
                reason: "no space".into(),
                disk_full: true
            }),
            507
        );
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        assert_eq!(status(S::io("/data/wal/1.wal", full)), 507);
        assert_eq!(status(S::io("/data", std::io::Error::other("eio"))), 500);
        assert_eq!(status(S::corrupt("part", "checksum")), 500);
    }

    #[test]
    fn a_store_failure_on_the_query_path_is_a_5xx() {
        let b: runakefli_model::BackendError = S::Closed.into();
        assert_eq!(ApiError::from(b).status, 500);
    }
}
