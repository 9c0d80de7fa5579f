//! Counters and the snapshot the server exposes at `GET /admin/storage/stats`.

use std::sync::atomic::{AtomicU64, Ordering};

/// Running totals kept by the store.
#[derive(Debug, Default)]
pub struct Counters {
    /// Entries acknowledged by `append`.
    pub appended_rows: AtomicU64,
    /// Entries written to parts by flushes.
    pub flushed_rows: AtomicU64,
    /// Completed flushes that wrote data.
    pub flushes: AtomicU64,
    /// Merges running now.
    pub merges_running: AtomicU64,
    /// Completed merges.
    pub merges_done: AtomicU64,
    /// Rows written by merges.
    pub merged_rows: AtomicU64,
    /// Background flush or merge failures.
    pub background_errors: AtomicU64,
    /// CPU time spent in flushes, microseconds.
    pub flush_cpu_us: AtomicU64,
    /// CPU time spent in merges, microseconds.
    pub merge_cpu_us: AtomicU64,
}

/// CPU time consumed by the calling thread so far.
pub fn thread_cpu() -> std::time::Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the valid timespec we pass.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return std::time::Duration::ZERO;
    }
    std::time::Duration::new(
        t.tv_sec.max(0) as u64,
        t.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

impl Counters {
    /// Adds `n` to a counter.
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }
}

/// A point-in-time view of the store.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct StorageStats {
    /// Tenants with data.
    pub tenants: u64,
    /// Streams over all tenants.
    pub streams: u64,
    /// Day partitions over all tenants.
    pub partitions: u64,
    /// Live parts.
    pub parts: u64,
    /// Rows in live parts.
    pub part_rows: u64,
    /// Bytes of live part files.
    pub part_bytes: u64,
    /// Merges running now.
    pub merges_running: u64,
    /// Completed merges.
    pub merges_done: u64,
    /// Partitions where the merge policy would merge now or once the partition
    /// is idle; together with `merges_running == 0` this says merges settled.
    pub merge_backlog: u64,
    /// Rows written by merges.
    pub merged_rows: u64,
    /// Entries in memtables (active and being flushed).
    pub memtable_rows: u64,
    /// Approximate memtable bytes (active and being flushed).
    pub memtable_bytes: u64,
    /// Entries acknowledged since open.
    pub appended_rows: u64,
    /// Entries written to parts by flushes since open.
    pub flushed_rows: u64,
    /// Flushes since open.
    pub flushes: u64,
    /// WAL bytes written since open.
    pub wal_bytes_written: u64,
    /// Bytes of WAL segments on disk.
    pub wal_disk_bytes: u64,
    /// Everything on disk: parts, WAL, stream index files.
    pub disk_bytes: u64,
    /// Background flush or merge failures since open.
    pub background_errors: u64,
    /// Files that failed verification when the store opened and were moved
    /// (or copied) to `quarantine/` (see `docs/storage-format.md`).
    pub quarantined_files: u64,
    /// CPU milliseconds spent in flushes since open.
    pub flush_cpu_ms: u64,
    /// CPU milliseconds spent in merges since open.
    pub merge_cpu_ms: u64,
}
