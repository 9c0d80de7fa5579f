//! What the backend counts since it was opened: how much of the queries
//! ran in SQL ([`SqlStats`]) and what housekeeping did
//! ([`HousekeepingStats`]), kept as atomics ([`Counters`]) by the readers
//! and the housekeeping thread.

use std::sync::atomic::{AtomicU64, Ordering};

/// How much of the queries so far ran in SQL: plans ClickHouse answered,
/// plans declined (so the engine scanned), and the rows each path shipped
/// from ClickHouse. Counted since the backend was opened; for the bench's
/// "how much ran in SQL" column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SqlStats {
    /// Plans answered by SQL (`Backend::execute` returned an answer).
    pub plans_answered: u64,
    /// Plans declined: the SQL cannot express them exactly, the engine scans.
    pub plans_declined: u64,
    /// Answer rows of answered plans (lines, or (group, bucket) rows).
    pub plan_rows: u64,
    /// Scans (`Backend::scan`) served.
    pub scans: u64,
    /// Log rows shipped to the engine by scans.
    pub scan_rows: u64,
    /// Stream-bounds queries answered (`Backend::stream_bounds`, for
    /// `/series`): each stream's first and last time aggregated in SQL.
    pub bounds_queries: u64,
    /// Rows those queries shipped: one per stream, never a log row.
    pub bounds_rows: u64,
    /// Stream-totals queries answered (`Backend::stream_totals`, for
    /// `index/stats` and `index/volume`): each stream's entries summed in SQL.
    pub totals_queries: u64,
    /// Rows those queries shipped: one per stream, never a log row.
    pub totals_rows: u64,
    /// Log rows of answered plans the SQL could not decide (a `| json`
    /// value ClickHouse cannot give as Loki writes it, a line Loki's
    /// parser would mark `__error__`), shipped whole for the engine.
    pub residual_rows: u64,
    /// Legs lines plans read (`crate::lines`: slices of whole days of the
    /// plan's range, read until the limit is held).
    pub lines_legs: u64,
    /// SQL reads of lines plans: one per page of a leg.
    pub lines_pages: u64,
    /// SQL reads of bucket plans (range aggregations): one per leg
    /// (`crate::buckets`: runs of whole days of the plan's buckets, read at
    /// once), one for a plan read whole.
    pub metric_legs: u64,
}

/// The live counts behind [`SqlStats`] and [`HousekeepingStats`].
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) plans_answered: AtomicU64,
    pub(crate) plans_declined: AtomicU64,
    pub(crate) plan_rows: AtomicU64,
    pub(crate) scans: AtomicU64,
    pub(crate) scan_rows: AtomicU64,
    pub(crate) bounds_queries: AtomicU64,
    pub(crate) bounds_rows: AtomicU64,
    pub(crate) residual_rows: AtomicU64,
    pub(crate) totals_queries: AtomicU64,
    pub(crate) totals_rows: AtomicU64,
    pub(crate) lines_legs: AtomicU64,
    pub(crate) lines_pages: AtomicU64,
    pub(crate) metric_legs: AtomicU64,
    pub(crate) housekeeping: HousekeepingCounters,
}

/// What the housekeeping thread did (see [`HousekeepingStats`]).
#[derive(Default)]
pub(crate) struct HousekeepingCounters {
    pub(crate) retention_passes: AtomicU64,
    pub(crate) retention_failures: AtomicU64,
    pub(crate) dropped_partitions: AtomicU64,
    pub(crate) row_deletes: AtomicU64,
    pub(crate) expired_stream_days: AtomicU64,
    pub(crate) deletes_processed: AtomicU64,
    pub(crate) delete_failures: AtomicU64,
}

/// What retention and delete processing did since the backend opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HousekeepingStats {
    /// Retention passes that completed.
    pub retention_passes: u64,
    /// Retention passes that failed (tried again next interval).
    pub retention_failures: u64,
    /// `logs` day partitions dropped whole by retention.
    pub dropped_partitions: u64,
    /// Lightweight `DELETE FROM logs` statements retention ran.
    pub row_deletes: u64,
    /// (stream, day) pairs retention expired.
    pub expired_stream_days: u64,
    /// Delete requests purged and marked processed.
    pub deletes_processed: u64,
    /// Rounds of delete processing that failed (tried again next tick).
    pub delete_failures: u64,
}

impl Counters {
    /// How much of the queries counted so far ran in SQL.
    pub(crate) fn sql_stats(&self) -> SqlStats {
        let c = self;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        SqlStats {
            plans_answered: get(&c.plans_answered),
            plans_declined: get(&c.plans_declined),
            plan_rows: get(&c.plan_rows),
            scans: get(&c.scans),
            scan_rows: get(&c.scan_rows),
            bounds_queries: get(&c.bounds_queries),
            bounds_rows: get(&c.bounds_rows),
            residual_rows: get(&c.residual_rows),
            totals_queries: get(&c.totals_queries),
            totals_rows: get(&c.totals_rows),
            lines_legs: get(&c.lines_legs),
            lines_pages: get(&c.lines_pages),
            metric_legs: get(&c.metric_legs),
        }
    }

    /// What retention and delete processing did since the counting began.
    pub(crate) fn housekeeping_stats(&self) -> HousekeepingStats {
        let h = &self.housekeeping;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        HousekeepingStats {
            retention_passes: get(&h.retention_passes),
            retention_failures: get(&h.retention_failures),
            dropped_partitions: get(&h.dropped_partitions),
            row_deletes: get(&h.row_deletes),
            expired_stream_days: get(&h.expired_stream_days),
            deletes_processed: get(&h.deletes_processed),
            delete_failures: get(&h.delete_failures),
        }
    }
}
