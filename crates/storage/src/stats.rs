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
    /// Retention passes run.
    pub retention_runs: AtomicU64,
    /// Partitions retention dropped whole.
    pub retention_dropped_partitions: AtomicU64,
    /// Partitions retention rewrote without expired streams.
    pub retention_rewritten_partitions: AtomicU64,
    /// Stored rows retention removed.
    pub retention_removed_rows: AtomicU64,
    /// Part bytes retention gave up.
    pub retention_freed_bytes: AtomicU64,
    /// Stored rows purged by delete requests (by merges and purge rewrites).
    pub deleted_rows: AtomicU64,
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
    /// Times the write-ahead log healed after a full disk since open.
    pub wal_recoveries: u64,
    /// Everything on disk: parts, WAL, stream index files.
    pub disk_bytes: u64,
    /// Background flush or merge failures since open.
    pub background_errors: u64,
    /// Files that failed verification when the store opened and were moved
    /// (or copied) to `quarantine/` (see `docs/storage-format.md`).
    pub quarantined_files: u64,
    /// WAL segments whose torn tail was cut when the store opened: a record
    /// cut short at the end of the newest segment, as a crash during its
    /// write leaves it (never acknowledged) — or as a truncated file does,
    /// which loses acknowledged records; reported so it is never silent.
    pub wal_torn_tails: u64,
    /// Blocks of parts found damaged when read since open (left out of reads
    /// and merges; each part kept in the quarantine).
    pub damaged_blocks: u64,
    /// CPU milliseconds spent in flushes since open.
    pub flush_cpu_ms: u64,
    /// CPU milliseconds spent in merges since open.
    pub merge_cpu_ms: u64,
    /// Retention passes since open.
    pub retention_runs: u64,
    /// Partitions retention dropped whole since open.
    pub retention_dropped_partitions: u64,
    /// Partitions retention rewrote without expired streams since open.
    pub retention_rewritten_partitions: u64,
    /// Stored rows retention removed since open.
    pub retention_removed_rows: u64,
    /// Part bytes retention gave up since open.
    pub retention_freed_bytes: u64,
    /// Stored rows purged by delete requests since open.
    pub deleted_rows: u64,
    /// Delete requests not yet processed, over all tenants.
    pub pending_deletes: u64,
}

/// One tenant's share of the store.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TenantStats {
    /// The tenant id.
    pub tenant: String,
    /// Streams known to the tenant's index.
    pub streams: u64,
    /// Day partitions.
    pub partitions: u64,
    /// Live parts.
    pub parts: u64,
    /// Rows in live parts.
    pub part_rows: u64,
    /// Bytes of the tenant's files: parts, stream index and its other files
    /// (the shared WAL is not counted here).
    pub disk_bytes: u64,
}

/// Upper bounds (seconds) of latency histograms: 100 µs to 30 s, covering an
/// fsync on fast NVMe up to a slow query.
pub const LATENCY_BOUNDS_SECONDS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0,
];

/// A latency histogram with fixed buckets, updated without locks.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Per bucket (not cumulative); the last slot counts values above every bound.
    counts: Vec<AtomicU64>,
    sum_ns: AtomicU64,
}

/// A histogram as read at one moment, buckets cumulative as Prometheus wants them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistogramSnapshot {
    /// `(upper bound in seconds, observations ≤ bound)`, ascending.
    pub buckets: Vec<(f64, u64)>,
    /// Every observation (the `+Inf` bucket).
    pub count: u64,
    /// Sum of observations, seconds.
    pub sum_seconds: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new(LATENCY_BOUNDS_SECONDS)
    }
}

impl Histogram {
    /// A histogram over ascending upper `bounds`, in seconds.
    pub fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
        }
    }

    /// Records one duration.
    pub fn observe(&self, d: std::time::Duration) {
        let s = d.as_secs_f64();
        let i = self.bounds.partition_point(|b| *b < s);
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_ns
            .fetch_add(d.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }

    /// Cumulative buckets, count and sum.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut acc = 0;
        let mut buckets = Vec::with_capacity(self.bounds.len());
        for (b, c) in self.bounds.iter().zip(&self.counts) {
            acc += c.load(Ordering::Relaxed);
            buckets.push((*b, acc));
        }
        acc += self.counts[self.bounds.len()].load(Ordering::Relaxed);
        HistogramSnapshot {
            buckets,
            count: acc,
            sum_seconds: self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn histogram_buckets_are_cumulative_and_bounds_inclusive() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(100)); // exactly the first bound
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_secs(60)); // above every bound
        let s = h.snapshot();
        assert_eq!(s.count, 3);
        assert_eq!(s.buckets[0], (0.0001, 1));
        let at = |b: f64| s.buckets.iter().find(|(x, _)| *x == b).unwrap().1;
        assert_eq!(at(0.0025), 1);
        assert_eq!(at(0.005), 2);
        assert_eq!(at(30.0), 2);
        assert!((s.sum_seconds - 60.0031).abs() < 1e-9);
    }
}
