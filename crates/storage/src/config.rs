//! Configuration of the store and every fixed limit of the write side and
//! the format, each with its reason (the query executor's are in
//! `runakefli-storage-query`).

use std::path::PathBuf;
use std::time::Duration;

/// Flushed blocks and merged blocks stop growing at this many rows: large enough
/// for good compression and cheap per-block overhead, small enough that one
/// decoded block stays a few MiB.
pub const BLOCK_MAX_ROWS: usize = 8192;

/// Blocks also stop at this many raw (uncompressed) bytes, which bounds the memory
/// one decoded block needs during scans and merges.
pub const BLOCK_MAX_RAW_BYTES: usize = 2 << 20;

/// Upper bound of a decoded WAL record; anything larger is treated as corrupt
/// rather than allocated (hostile or damaged length fields).
pub const WAL_RECORD_MAX_BYTES: usize = 1 << 30;

/// Bookkeeping bytes charged per memtable entry on top of its strings (the
/// `Entry` struct, vectors and allocator slack), so the flush threshold tracks RSS.
pub const MEMTABLE_ENTRY_OVERHEAD: usize = 64;

/// Appends block once the active memtable holds this many times the flush
/// threshold (a flush is still running): bounds memory when disks are slower than
/// ingest.
pub const MEMTABLE_BACKPRESSURE_FACTOR: usize = 2;

/// The parts keep about this many bytes of the data frames queries read
/// mapped into the process, beyond each block's header, bloom and directory
/// (which stay mapped): once the process's resident file pages pass the kept
/// ones by more, a part drops the pages of its blocks read since its last
/// drop from the mapping (they stay in the page cache). A scan over every
/// block of a large part would otherwise leave the whole file in the
/// resident set; a working set below it is not faulted in again at every
/// query (part/resident.rs).
pub const PART_MAPPED_DATA_MAX_BYTES: usize = 256 << 20;

/// The parts also drop the data pages queries read once the whole resident
/// set (heap included) passes the kept pages by more than this: a query
/// holding a large heap (every unwrapped value of a quantile, say) leaves
/// less room for mapped data pages, so the resident set stays near the kept
/// pages plus this (part/resident.rs). At 10M reference lines the kept pages
/// are ~160 MiB and a quantile over everything holds ~200 MiB of heap: 288
/// MiB keeps the peak near 450 MiB (320 MiB let it reach the 500 MiB line;
/// 256 MiB made log queries there drop and fault in their pages every run).
pub const RESIDENT_BEYOND_KEPT_MAX_BYTES: usize = 288 << 20;

/// An append waits at most this long for a flush to make room in the memtable
/// before it fails, so a failing disk surfaces as errors rather than hangs.
pub const BACKPRESSURE_MAX_WAIT: Duration = Duration::from_secs(30);

/// How often the background threads wake up to check their conditions when no
/// one signals them.
pub const BACKGROUND_TICK: Duration = Duration::from_millis(500);

/// A write-ahead log poisoned by a full disk tries to start a new segment at
/// most this often (on appends and on the flush thread's tick), so refused
/// pushes do not each cost file-system calls while the disk stays full.
pub const WAL_RETRY_INTERVAL: Duration = Duration::from_secs(1);

/// Settings of a store.
#[derive(Clone, Debug)]
pub struct StorageConfig {
    /// Root directory of all data.
    pub data_dir: PathBuf,
    /// Flush the memtable once it holds this many bytes (lines, metadata and
    /// per-entry overhead, over all tenants). 64 MiB keeps peak RSS well under
    /// the server's budget while giving flushed blocks some size.
    pub memtable_flush_bytes: usize,
    /// Flush the memtable once its oldest entry is this old, so idle streams reach
    /// parts (and the WAL can be trimmed).
    pub flush_interval: Duration,
    /// zstd level for parts written by flushes: fast (negative levels trade a
    /// little size for speed), since merges rewrite the data anyway.
    pub flush_zstd_level: i32,
    /// Encode flushed parts with the columnar block codec (token indexes for
    /// recent data, smaller files) instead of row-wise zstd blocks. Off by
    /// default: merges re-encode every row anyway, and encoding columnar twice
    /// roughly doubles ingest CPU.
    pub flush_columnar: bool,
    /// zstd level for merged parts: they live long, so spend a bit more CPU.
    pub merge_zstd_level: i32,
    /// zstd level of WAL records: the cheapest level that still shrinks JSON
    /// several times.
    pub wal_zstd_level: i32,
    /// A WAL segment is closed and a new one started once it exceeds this many
    /// bytes, so replay and deletion work on bounded files (64 MiB).
    pub wal_segment_max_bytes: u64,
    /// fsync the WAL before acknowledging an append (on by default; off only for
    /// throwaway stores).
    pub wal_fsync: bool,
    /// Largest WAL record an append may write (uncompressed body and frame),
    /// capped at [`WAL_RECORD_MAX_BYTES`], the most replay accepts. Appends
    /// past it fail with `RecordTooLarge` before anything is written.
    pub wal_record_max_bytes: usize,
    /// Size-tiered merging: merge at least this many neighbouring parts of similar
    /// size. High, so that a row is rewritten by few merges (each costs a full
    /// columnar encode); flushed parts are cheap to read meanwhile.
    pub merge_min_parts: usize,
    /// Never merge more than this many parts at once (bounds open inputs and
    /// decoded blocks held by one merge: one block per input).
    pub merge_max_parts: usize,
    /// Parts count as "similar size" when the largest is at most this many times
    /// the smallest.
    pub merge_size_ratio: u64,
    /// A partition that received no flush for this long gets its remaining small
    /// parts merged into one, so settled data ends up in few large blocks.
    pub merge_idle_after: Duration,
    /// Retention by age and disk size (off unless configured).
    pub retention: runakefli_model::retention::RetentionConfig,
    /// A delete request can be cancelled this long after it was made; then
    /// its rows are purged from disk (Loki's `delete_request_cancel_period`).
    pub delete_cancel_period: Duration,
    /// Run background flush and merge threads (tests may turn them off to drive
    /// everything by hand).
    pub background: bool,
}

impl StorageConfig {
    /// Defaults for a store rooted at `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        StorageConfig {
            data_dir: data_dir.into(),
            memtable_flush_bytes: 64 << 20,
            flush_interval: Duration::from_secs(30),
            flush_zstd_level: -3,
            flush_columnar: false,
            merge_zstd_level: 3,
            wal_zstd_level: 1,
            wal_segment_max_bytes: 64 << 20,
            wal_fsync: true,
            wal_record_max_bytes: WAL_RECORD_MAX_BYTES,
            merge_min_parts: 16,
            merge_max_parts: 24,
            merge_size_ratio: 4,
            merge_idle_after: Duration::from_secs(5),
            retention: Default::default(),
            delete_cancel_period: Duration::from_secs(24 * 3600),
            background: true,
        }
    }
}
