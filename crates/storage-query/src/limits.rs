//! Fixed limits of the query executor, each with its reason.

/// Scans hand entries to the engine in batches of at most this many entries, so
/// the engine can stop early without the backend materialising a whole stream.
pub const SCAN_BATCH_ENTRIES: usize = 1000;

/// A bucket plan holding more than this many bytes of residual rows (rows of
/// memtables and unmerged parts it hands back whole for the engine to
/// evaluate) is declined, and the engine's scan, which holds one batch at a
/// time, evaluates the query instead: the rows of a busy memtable and its
/// unflushed parts would otherwise be copied into one answer.
pub const PLAN_RESIDUAL_MAX_BYTES: usize = 32 << 20;

/// A bucket plan making more groups than this (on one worker) is declined
/// for the engine's scan, where the series and points limits apply while it
/// runs (`sum by (request_id)` would otherwise make a group per row).
pub const PLAN_MAX_GROUPS: usize = 100_000;
