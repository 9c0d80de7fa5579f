//! The contract between the query engine and a storage backend.
//!
//! The embedded columnar store's executor (`runakefli-storage-query`'s
//! `EmbeddedBackend`) and the ClickHouse backend (`runakefli-clickhouse`) implement
//! [`Backend`]. The engine never sees files, parts, blocks or SQL.

use crate::{Entry, Labels, Matcher, StreamId, TenantId, Timestamp};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use thiserror::Error;

/// Failure inside a backend, by kind: each kind has one HTTP status, the
/// one Loki answers with for such a failure (the server's and the engine's
/// mappings name every kind, so a new kind must be given its status):
///
/// | kind | status | who is at fault |
/// | --- | --- | --- |
/// | [`Io`](Self::Io), [`Corrupt`](Self::Corrupt), [`Internal`](Self::Internal) | 500 | the backend |
/// | [`Limit`](Self::Limit), [`Rejected`](Self::Rejected) | 400 | the query (retrying cannot help) |
/// | [`Unavailable`](Self::Unavailable) | 503 | nobody: a retry may pass |
/// | [`Timeout`](Self::Timeout) | 504 | the backend, slower than its own time limit |
/// | [`Cancelled`](Self::Cancelled) | 504 (the engine reports it from a plan or a metadata read as its own timeout; 499 where it passes on unconverted) | the deadline, or the client went away |
///
/// The embedded store fails with the first four kinds; a remote backend
/// (ClickHouse) uses the others too: a remote failure that is none of
/// `Unavailable`, `Timeout`, `Rejected`, `Limit`, `Cancelled` or `Corrupt`
/// is `Internal`, with the remote's message.
#[derive(Debug, Error)]
pub enum BackendError {
    /// Reading or writing failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// Stored data is damaged; the message names the file.
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// The request exceeds a configured limit.
    #[error("{0}")]
    Limit(String),
    /// The query was cancelled or timed out: its deadline passed
    /// ([`crate::plan::QueryPlan::deadline`]) or its client went away.
    #[error("query cancelled")]
    Cancelled,
    /// The backend cannot be reached, or refuses work for now (busy,
    /// overloaded, read-only): a retry may pass. HTTP 503.
    #[error("backend unavailable: {0}")]
    Unavailable(String),
    /// The backend did not answer within its own time limit (not the
    /// query's deadline, which is [`BackendError::Cancelled`]). HTTP 504.
    #[error("backend timed out: {0}")]
    Timeout(String),
    /// The backend refused the query as one it can never run as sent (a
    /// regexp it cannot compile, a request it cannot evaluate exactly);
    /// retrying cannot help. HTTP 400, as Loki answers a bad query.
    #[error("{0}")]
    Rejected(String),
    /// Any other failure inside the backend, with its message. HTTP 500.
    #[error("backend error: {0}")]
    Internal(String),
}

/// Order of entries within a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Direction {
    /// Oldest first.
    Forward,
    /// Newest first (Loki's default).
    #[default]
    Backward,
}

/// A stream known to the backend.
#[derive(Clone, Debug)]
pub struct StreamInfo {
    /// The stream's id within its tenant.
    pub id: StreamId,
    /// The stream's labels.
    pub labels: Arc<Labels>,
}

/// A stream and the timestamps of its first and last entry in a window
/// (see [`Backend::stream_bounds`]).
#[derive(Clone, Debug)]
pub struct StreamBounds {
    /// The stream.
    pub stream: StreamInfo,
    /// Timestamp of its oldest entry in the window, nanoseconds.
    pub first: Timestamp,
    /// Timestamp of its newest entry in the window, nanoseconds.
    pub last: Timestamp,
}

/// A stream's entries in a window, summed without shipping them (see
/// [`Backend::stream_totals`]); exact duplicates count once.
#[derive(Clone, Debug)]
pub struct StreamTotals {
    /// The stream.
    pub stream: StreamInfo,
    /// Timestamp of its oldest entry in the window, nanoseconds.
    pub first: Timestamp,
    /// Timestamp of its newest entry in the window, nanoseconds.
    pub last: Timestamp,
    /// Its entries in the window.
    pub entries: u64,
    /// The bytes of their lines.
    pub line_bytes: u64,
    /// Their structured-metadata pairs (a name given twice on an entry
    /// counts twice).
    pub metadata_pairs: u64,
    /// The bytes of each distinct string among those pairs' names and
    /// values, counted once per stream.
    pub metadata_distinct_bytes: u64,
}

/// What a scan reads: the matching streams' entries in `[start, end)`.
#[derive(Clone, Debug)]
pub struct ScanRequest {
    /// Whose data.
    pub tenant: TenantId,
    /// Stream selector; every matcher must hold.
    pub matchers: Vec<Matcher>,
    /// Inclusive start, nanoseconds.
    pub start: Timestamp,
    /// Exclusive end, nanoseconds.
    pub end: Timestamp,
    /// Order of entries within each stream.
    pub direction: Direction,
    /// Substrings that every wanted line contains (case-sensitive). A hint the
    /// backend may use to skip blocks via its token indexes and to leave out
    /// rows whose lines certainly lack one; the engine still checks every
    /// line it receives.
    pub required_substrings: Vec<String>,
    /// Read only this slice of the matching streams (parallel scans: each
    /// shard is scanned by its own worker). `None`: every matching stream.
    pub shard: Option<Shard>,
    /// For log queries with a limit: a time bound, tightened by the engine
    /// while scans run, past which no row can make the answer. The backend
    /// may skip blocks and rows on the far side of it (older when scanning
    /// backward, newer when scanning forward).
    pub cutoff: Option<Arc<TimeCutoff>>,
}

impl ScanRequest {
    /// A request for every entry of the streams matching `matchers` in
    /// `[start, end)`, with no hints.
    pub fn new(
        tenant: TenantId,
        matchers: Vec<Matcher>,
        start: Timestamp,
        end: Timestamp,
        direction: Direction,
    ) -> Self {
        ScanRequest {
            tenant,
            matchers,
            start,
            end,
            direction,
            required_substrings: Vec::new(),
            shard: None,
            cutoff: None,
        }
    }

    /// Whether the request covers stream `id` (see [`ScanRequest::shard`]).
    pub fn covers(&self, id: StreamId) -> bool {
        self.shard.is_none_or(|s| s.holds(id))
    }
}

/// One of `count` disjoint slices of the streams: those whose id modulo
/// `count` is `index`. Stream ids are hashes, so slices are about equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which slice, below `count`.
    pub index: u32,
    /// Number of slices (at least 1).
    pub count: u32,
}

impl Shard {
    /// Whether stream `id` belongs to this slice.
    pub fn holds(&self, id: StreamId) -> bool {
        self.count <= 1 || id % u64::from(self.count) == u64::from(self.index)
    }
}

/// A time bound shared by the parallel scans of one log query: once `limit`
/// kept rows are known, rows on the far side of the worst of them cannot
/// make the answer. Reading backward the bound only rises (older rows are
/// unwanted), reading forward it only falls. Rows *at* the bound are still
/// wanted (ties are broken by labels).
#[derive(Debug)]
pub struct TimeCutoff {
    direction: Direction,
    ts: AtomicI64,
}

impl TimeCutoff {
    /// A bound that excludes nothing yet.
    pub fn new(direction: Direction) -> Self {
        let ts = match direction {
            Direction::Backward => i64::MIN,
            Direction::Forward => i64::MAX,
        };
        TimeCutoff {
            direction,
            ts: AtomicI64::new(ts),
        }
    }

    /// Moves the bound to `ts` if that excludes more.
    pub fn tighten(&self, ts: i64) {
        match self.direction {
            Direction::Backward => self.ts.fetch_max(ts, Ordering::Relaxed),
            Direction::Forward => self.ts.fetch_min(ts, Ordering::Relaxed),
        };
    }

    /// Whether a row at `ts` is unwanted.
    pub fn excludes(&self, ts: i64) -> bool {
        let b = self.ts.load(Ordering::Relaxed);
        match self.direction {
            Direction::Backward => ts < b,
            Direction::Forward => ts > b,
        }
    }

    /// The inclusive range `[lo, hi]` narrowed to the rows still wanted.
    pub fn narrow(&self, lo: i64, hi: i64) -> (i64, i64) {
        let b = self.ts.load(Ordering::Relaxed);
        match self.direction {
            Direction::Backward => (lo.max(b), hi),
            Direction::Forward => (lo, hi.min(b)),
        }
    }
}

/// Entries of one stream, in the scan's direction.
#[derive(Clone, Debug, Default)]
pub struct EntryBatch {
    /// The entries, ordered by timestamp in the scan's direction; entries with equal
    /// timestamps keep push order (reversed when scanning backward).
    pub entries: Vec<Entry>,
}

/// What the scan callback wants next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanControl {
    /// Keep sending batches.
    Continue,
    /// Send no more batches of the current stream; go on with the next.
    NextStream,
    /// End the scan.
    Stop,
}

/// Which JSON members a column scan returns (see [`Backend::scan_columns`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnRequest {
    /// Label names as Loki's parameterless `| json` stage names members:
    /// nested keys joined with `_`, every byte outside `[A-Za-z0-9_]` replaced
    /// by `_`, a leading digit prefixed with `_`; before any `_extracted`
    /// rename for clashes with stream labels.
    pub json_labels: Vec<String>,
    /// Top-level keys, answered as Loki's `| json label="key"` reads them:
    /// the value of the object's member named exactly `key` (raw text, see
    /// [`JsonValue`]), `None` when the object has no such member. Keys hold
    /// only `[A-Za-z0-9_]`.
    pub json_keys: Vec<String>,
}

/// One JSON scalar member of a line, as written in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonValue {
    /// The raw text: for strings the body between the quotes with escapes
    /// untouched; for numbers and booleans the token as written.
    pub text: String,
    /// True for a JSON string.
    pub string: bool,
    /// Position of the member among the line's scalar members, in line
    /// order (only the relative order matters).
    pub order: u32,
}

/// What a column scan gives for one row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowFields {
    /// The line is one JSON object that Loki's `| json` walks without error,
    /// none of its members is named twice, and every non-string value is an
    /// array, `true`, `false`, `null` or starts with a digit or `-`. Per
    /// requested label (same order as [`ColumnRequest::json_labels`], then
    /// one per [`ColumnRequest::json_keys`] entry, see there): the
    /// first member in line order with that label name whose value is a
    /// string, number or boolean; `None` when there is none.
    Json(Vec<Option<JsonValue>>),
    /// The backend cannot answer from columns; here is the whole line.
    Line(String),
}

/// One row of a column scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnRow {
    /// Nanoseconds since the epoch.
    pub ts: Timestamp,
    /// Structured metadata, in push order.
    pub metadata: Vec<(String, String)>,
    /// The requested members, or the line.
    pub fields: RowFields,
}

/// Rows of one stream from a column scan, in the scan's direction, with
/// the same rows (after duplicate removal) and order as [`Backend::scan`].
#[derive(Clone, Debug, Default)]
pub struct ColumnBatch {
    /// The rows.
    pub rows: Vec<ColumnRow>,
    /// Sum of the line lengths of the rows answered with
    /// [`RowFields::Json`] (for statistics).
    pub json_line_bytes: u64,
}

/// A storage backend as the query engine sees it.
///
/// # Threads
///
/// The engine runs queries on one process-wide rayon pool, its *query
/// pool* (`engine::parallel`: `RUNAKEFLI_QUERY_THREADS` workers, else one
/// per CPU), shared by every query of the process, and calls a backend from
/// it as follows:
///
/// - [`Backend::execute`] is called inside the pool
///   (`engine::parallel::install`, from the engine's log and metric
///   pushdown), on one worker, the pool's other workers woken to stand by
///   for a few milliseconds. The plan's own parallel work may — and for the
///   embedded store does — use rayon from there: `par_iter`, `join` and
///   `rayon::current_num_threads()` then mean the query pool's workers (the
///   store fans its plan out over every worker of the current pool, and
///   relies on that being the query pool, sized as configured, not rayon's
///   global pool). Concurrent queries call `execute` at once from
///   different workers.
/// - [`Backend::scan`] and [`Backend::scan_columns`] are called from the
///   pool too, once per shard of a parallel scan (`engine::parallel::
///   map_shards`, [`ScanRequest::shard`] set), each shard's call on its own
///   worker; the engine's metadata reads (`/series` stream ends) scan from
///   the caller's thread.
/// - The other methods ([`Backend::streams`], [`Backend::label_names`],
///   [`Backend::label_values`], [`Backend::stream_bounds`],
///   [`Backend::stream_totals`]) are called from the request's thread
///   (the server's blocking threads), outside the pool.
///
/// So a call must not block on work it queues to the same pool and waits
/// for outside rayon (a worker waiting so holds a slot other queries need;
/// waiting inside rayon — `join`, `scope`, a parallel iterator — is fine,
/// the waiting worker runs other pool jobs meanwhile). A backend that waits
/// on I/O (a remote database) holds its worker for the wait: ClickHouse
/// reads a plan's legs on threads of its own (scoped `std::thread`s), not
/// on pool workers, and does no rayon work of its own.
pub trait Backend: Send + Sync {
    /// Streams whose labels satisfy all `matchers` and that may have entries in
    /// `[start, end)`.
    fn streams(
        &self,
        tenant: &TenantId,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<StreamInfo>, BackendError>;

    /// Label names of streams with data in `[start, end)`, sorted.
    fn label_names(
        &self,
        tenant: &TenantId,
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<String>, BackendError>;

    /// Values of `name` over streams matching `matchers` with data in `[start, end)`, sorted.
    fn label_values(
        &self,
        tenant: &TenantId,
        name: &str,
        matchers: &[Matcher],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<Vec<String>, BackendError>;

    /// Reads the entries of every matching stream. Each stream's batches arrive
    /// consecutively and in order; streams come in no particular order. `visit`
    /// steers the scan with its return value.
    fn scan(
        &self,
        request: &ScanRequest,
        visit: &mut dyn FnMut(&StreamInfo, EntryBatch) -> ScanControl,
    ) -> Result<(), BackendError>;

    /// Runs a query plan (see [`crate::plan`]); `Ok(None)` when the backend
    /// leaves this plan to the engine (which then scans and evaluates every
    /// stage itself). The default declines every plan.
    ///
    /// Called on a worker of the engine's query pool (see the trait's
    /// "Threads"): rayon parallelism inside runs on that pool. Label filters
    /// come as data ([`crate::plan::FieldFilter::condition`]) for a backend
    /// that compiles them itself, and as the engine's compiled test for one
    /// that calls it; both mean the same.
    fn execute(
        &self,
        _plan: &crate::plan::QueryPlan,
    ) -> Result<Option<crate::plan::PlanAnswer>, BackendError> {
        Ok(None)
    }

    /// For every stream matching `matchers` with at least one entry in
    /// `[start, end)`: the timestamps of its first and last entry there,
    /// read without shipping the entries (`/series` needs only these).
    /// Streams come in no particular order. `Ok(None)` when the backend
    /// leaves this to the engine, which then reads each stream's two ends
    /// with a forward and a backward [`Backend::scan`]. Past `deadline` the
    /// backend may fail with [`BackendError::Cancelled`]. The default
    /// declines (the embedded store scans, which stops after one batch per
    /// stream end).
    fn stream_bounds(
        &self,
        _tenant: &TenantId,
        _matchers: &[Matcher],
        _start: Timestamp,
        _end: Timestamp,
        _deadline: Option<std::time::Instant>,
    ) -> Result<Option<Vec<StreamBounds>>, BackendError> {
        Ok(None)
    }

    /// For every stream matching `matchers` with at least one entry in
    /// `[start, end)`: its entries there summed ([`StreamTotals`]), read
    /// without shipping them (`index/stats` and `index/volume` need only
    /// these). Streams come in no particular order. `Ok(None)` when the
    /// backend leaves this to the engine, which then scans every entry.
    /// Past `deadline` the backend may fail with
    /// [`BackendError::Cancelled`]. The default declines.
    fn stream_totals(
        &self,
        _tenant: &TenantId,
        _matchers: &[Matcher],
        _start: Timestamp,
        _end: Timestamp,
        _deadline: Option<std::time::Instant>,
    ) -> Result<Option<Vec<StreamTotals>>, BackendError> {
        Ok(None)
    }

    /// Like [`Backend::scan`], but each row carries only the JSON members the
    /// query needs when the backend can read them without the line
    /// ([`RowFields::Json`]); other rows carry their line. The default answers
    /// every row with its line.
    fn scan_columns(
        &self,
        request: &ScanRequest,
        _columns: &ColumnRequest,
        visit: &mut dyn FnMut(&StreamInfo, ColumnBatch) -> ScanControl,
    ) -> Result<(), BackendError> {
        self.scan(request, &mut |info, batch| {
            let rows = batch
                .entries
                .into_iter()
                .map(|e| ColumnRow {
                    ts: e.ts,
                    metadata: e.metadata,
                    fields: RowFields::Line(e.line),
                })
                .collect();
            visit(
                info,
                ColumnBatch {
                    rows,
                    json_line_bytes: 0,
                },
            )
        })
    }
}
