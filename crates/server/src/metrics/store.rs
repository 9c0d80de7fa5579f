//! The embedded store's figures as metric families, read at scrape time
//! (none on another backend).

use super::Exposition;
use crate::state::AppState;

/// Writes the WAL, memtable, part, merge and disk families.
pub(super) fn render(x: &mut Exposition, state: &AppState) {
    let Some(storage) = state.store.embedded_store() else {
        return;
    };
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
