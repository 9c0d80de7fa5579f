//! Server settings. The CLI fills them from flags and `RUNAKEFLI_*` variables.
//!
//! Plain data: [`crate::backends`] opens the store they describe and
//! [`crate::state`] builds the rest from them. Of the server's other modules
//! this one names only the defaults of limits they own.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// One `retention_stream` rule as configured: a stream selector, a priority
/// (the highest of the matching rules wins) and a period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionStream {
    /// LogQL stream selector, e.g. `{namespace="dev"}`.
    pub selector: String,
    /// Higher wins when several rules match a stream.
    pub priority: u32,
    /// How long matching streams are kept.
    pub period: Duration,
}

/// Per-tenant settings that replace the global ones (Loki's overrides).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TenantOverrides {
    /// Replaces [`ServerConfig::retention_period`].
    pub retention_period: Option<Duration>,
    /// Replaces [`ServerConfig::retention_streams`].
    pub retention_stream: Option<Vec<RetentionStream>>,
    /// Replaces [`ServerConfig::ingestion_rate_mb`].
    pub ingestion_rate_mb: Option<f64>,
    /// Replaces [`ServerConfig::ingestion_burst_size_mb`].
    pub ingestion_burst_size_mb: Option<f64>,
    /// Replaces [`ServerConfig::max_global_streams_per_user`].
    pub max_global_streams_per_user: Option<usize>,
}

/// Which store the server reads and writes ([`crate::backends`] opens it).
#[derive(Debug, Clone, Default)]
pub enum BackendConfig {
    /// The embedded columnar store under [`ServerConfig::data_dir`] (the default).
    #[default]
    Embedded,
    /// A ClickHouse database over its HTTP interface (`docs/clickhouse.md`);
    /// `data_dir` is not used.
    ClickHouse(Box<ClickHouseSettings>),
}

/// Everything `--backend clickhouse` is configured with (the ClickHouse
/// crate's own settings types).
#[derive(Debug, Clone)]
pub struct ClickHouseSettings {
    /// Where and how to connect: URL, database, credentials, TLS, cluster.
    pub connection: runakefli_clickhouse::Config,
    /// How many pushes, and bytes of their rows, may wait for ClickHouse at
    /// once; past it a push answers 503 at once.
    pub backlog: runakefli_clickhouse::Backlog,
    /// How range aggregations over several days are split into legs read
    /// at once.
    pub metric_legs: runakefli_clickhouse::MetricLegs,
}

impl ClickHouseSettings {
    /// `connection` with the default backlog and metric legs.
    pub fn new(connection: runakefli_clickhouse::Config) -> ClickHouseSettings {
        ClickHouseSettings {
            connection,
            backlog: runakefli_clickhouse::Backlog::default(),
            metric_legs: runakefli_clickhouse::MetricLegs::default(),
        }
    }
}

/// Default of [`ServerConfig::max_query_bytes`]: Loki's fixed input limit.
pub const DEFAULT_MAX_QUERY_BYTES: usize = runakefli_logql::MAX_INPUT_SIZE;
/// Default of [`ServerConfig::max_query_points`].
pub const DEFAULT_MAX_QUERY_POINTS: usize = runakefli_engine::limits::DEFAULT_MAX_QUERY_POINTS;
/// Default of [`ServerConfig::max_inflight_push_bytes`]: four bodies of the
/// largest accepted size.
pub const DEFAULT_MAX_INFLIGHT_PUSH_BYTES: usize = 256 << 20;
/// Default free space below which `/ready` answers 503: room for about one
/// default memtable's flush.
pub const DEFAULT_READY_MIN_FREE_DISK_BYTES: u64 = 64 << 20;
/// Default of [`ServerConfig::max_query_depth`].
pub const DEFAULT_MAX_QUERY_DEPTH: usize = runakefli_logql::DEFAULT_MAX_DEPTH;
/// Default of [`ServerConfig::answer_cache_bytes`].
pub const DEFAULT_ANSWER_CACHE_BYTES: usize =
    runakefli_storage_query::config::DEFAULT_ANSWER_CACHE_BYTES;
/// Default of [`ServerConfig::decoded_cache_bytes`].
pub const DEFAULT_DECODED_CACHE_BYTES: usize =
    runakefli_storage_query::config::DEFAULT_DECODED_CACHE_BYTES;
/// Default of [`ServerConfig::wal_record_max_bytes`] (the most WAL replay accepts).
pub const WAL_RECORD_MAX_BYTES: usize = runakefli_storage::config::WAL_RECORD_MAX_BYTES;

/// Everything the server needs to start.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on (Loki's port by default).
    pub listen: SocketAddr,
    /// The store: embedded (under `data_dir`) or ClickHouse.
    pub backend: BackendConfig,
    /// Where data lives (the embedded store).
    pub data_dir: PathBuf,
    /// Read the tenant from `X-Scope-OrgID` (Loki's `auth_enabled`); otherwise one tenant.
    pub multi_tenant: bool,
    /// Credentials file for basic and bearer auth ([`crate::auth`]); `None`:
    /// no authentication (the default, for deployments behind a gateway).
    /// When set, multi-tenancy is on whatever [`ServerConfig::multi_tenant`]
    /// says: the credential decides the tenant.
    pub auth_file: Option<PathBuf>,
    /// Largest accepted push body, compressed, in bytes.
    pub max_push_body_bytes: usize,
    /// Bytes of HTTP push bodies in flight at once; past it pushes answer 503
    /// ([`crate::push_gate`]). 0: no limit.
    pub max_inflight_push_bytes: usize,
    /// `/ready` answers 503 while the data directory's file system has less
    /// free space than this (embedded store). 0: not checked.
    pub ready_min_free_disk_bytes: u64,
    /// Largest accepted push body after decompression, in bytes.
    pub max_push_decompressed_bytes: usize,
    /// Most entries one push may expand to (OTLP log records); 0 for no limit.
    pub max_push_entries: usize,
    /// Most bytes of lines and structured metadata one push may expand to
    /// (OTLP copies resource attributes into every record); 0 for no limit.
    pub max_push_expanded_bytes: usize,
    /// Largest accepted line, in bytes (Loki's `max_line_size`).
    pub max_line_bytes: usize,
    /// Most labels per stream (Loki's `max_label_names_per_series`).
    pub max_labels_per_stream: usize,
    /// Longest label name (Loki's `max_label_name_length`).
    pub max_label_name_bytes: usize,
    /// Longest label value (Loki's `max_label_value_length`).
    pub max_label_value_bytes: usize,
    /// Most entries a log query may return (Loki's `max_entries_limit_per_query`).
    pub max_entries_per_query: u32,
    /// Most series a metric query may return (Loki's `max_query_series`).
    pub max_query_series: usize,
    /// Most points (samples and step values) one metric query may hold in
    /// memory, checked while it runs; 0: no limit.
    pub max_query_points: usize,
    /// Read requests (queries, labels, series, index stats) running at once;
    /// 0 for no limit.
    pub max_concurrent_queries: usize,
    /// Read requests waiting for a slot beyond those; more are answered 429.
    pub max_queued_queries: usize,
    /// Live tails (`/loki/api/v1/tail`) open at once per tenant (Loki's
    /// `max_concurrent_tail_requests`); more are closed at once with Loki's
    /// error. 0 for no limit.
    pub max_concurrent_tail_requests: usize,
    /// Longest a read request waits for a slot before it is answered 429.
    pub query_queue_timeout: std::time::Duration,
    /// Wall-clock budget of one read request, metadata included (504 past it).
    pub query_timeout: std::time::Duration,
    /// Queries of this many bytes or more are refused (Loki's fixed 5120).
    pub max_query_bytes: usize,
    /// Deepest nesting a query may have; deeper ones are refused with 400
    /// before they can exhaust a thread's stack.
    pub max_query_depth: usize,
    /// In-memory buffer size that triggers a flush to a part, in bytes.
    pub memtable_bytes: usize,
    /// Memory for the rows rebuilt for log queries' answers, kept for the
    /// next queries (embedded store; 0: off).
    pub answer_cache_bytes: usize,
    /// Memory for blocks' decoded columns and row timestamps, kept for the
    /// next queries (embedded store; 0: off).
    pub decoded_cache_bytes: usize,
    /// Longest time data stays only in memory and the WAL.
    pub flush_interval: Duration,
    /// fsync the WAL before acknowledging pushes (turning it off loses durability).
    pub wal_fsync: bool,
    /// A WAL segment is closed and the next one started past this many bytes.
    pub wal_segment_bytes: u64,
    /// Largest WAL record one push may make (at most 1 GiB, the most replay
    /// accepts); larger pushes are refused with 413 before being written.
    pub wal_record_max_bytes: usize,
    /// Keep data this long (Loki's `retention_period`); `None` or zero: forever.
    pub retention_period: Option<Duration>,
    /// Per-selector retention (Loki's `retention_stream`).
    pub retention_streams: Vec<RetentionStream>,
    /// Per-tenant overrides of the retention settings, by tenant id.
    pub tenant_overrides: BTreeMap<String, TenantOverrides>,
    /// Keep the store under this many bytes on disk by dropping the oldest
    /// days first; `None`: no budget.
    pub max_disk_bytes: Option<u64>,
    /// How often retention runs.
    pub retention_interval: Duration,
    /// Delete requests can be cancelled this long; then their rows are
    /// purged from disk (Loki's `delete_request_cancel_period`).
    pub delete_request_cancel_period: Duration,
    /// Refuse entries older than this (Loki's `reject_old_samples_max_age`);
    /// `None`: accept any age.
    pub reject_old_samples_max_age: Option<Duration>,
    /// Refuse entries more than this far in the future (Loki's
    /// `creation_grace_period`); `None`: accept any.
    pub creation_grace_period: Option<Duration>,
    /// Bytes per second each tenant may push, in MiB (Loki's
    /// `ingestion_rate_mb`); 0: no rate limit.
    pub ingestion_rate_mb: f64,
    /// Bytes a tenant may push at once above the rate, in MiB (Loki's
    /// `ingestion_burst_size_mb`).
    pub ingestion_burst_size_mb: f64,
    /// Streams each tenant may have active (Loki's
    /// `max_global_streams_per_user`); 0: no limit.
    pub max_global_streams_per_user: usize,
    /// Answer a query of its own before `/ready` says yes, so a user's first
    /// query does not pay for the process's first ([`crate::warm_up`]).
    pub warm_up: bool,
    /// Add `service_name` to pushed streams that have none, from Loki's
    /// discovery list, else `unknown_service` (Loki's `discover_service_name`,
    /// on by default as in Loki).
    pub discover_service_name: bool,
    /// Add `detected_level` structured metadata to pushed entries (Loki's
    /// `discover_log_levels`, on by default as in Loki).
    pub discover_log_levels: bool,
    /// Address for syslog over TCP (RFC 5424/3164, RFC 6587 framing); off when `None`.
    pub syslog_tcp_listen: Option<SocketAddr>,
    /// Address for syslog over UDP; off when `None`.
    pub syslog_udp_listen: Option<SocketAddr>,
    /// The ruler (alerting and recording rules, [`crate::ruler_api`]); off
    /// when `None` (no `--rules-dir`).
    pub ruler: Option<runakefli_ruler::Config>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: "127.0.0.1:3100".parse().expect("valid default address"),
            backend: BackendConfig::Embedded,
            data_dir: PathBuf::from("./runakefli-data"),
            multi_tenant: false,
            auth_file: None,
            max_push_body_bytes: 64 << 20,
            max_inflight_push_bytes: DEFAULT_MAX_INFLIGHT_PUSH_BYTES,
            ready_min_free_disk_bytes: DEFAULT_READY_MIN_FREE_DISK_BYTES,
            max_push_decompressed_bytes: 256 << 20,
            max_push_entries: 1_000_000,
            max_push_expanded_bytes: 256 << 20,
            max_line_bytes: 256 << 10,
            max_labels_per_stream: 15,
            max_label_name_bytes: 1024,
            max_label_value_bytes: 2048,
            max_entries_per_query: 10_000,
            max_query_series: 10_000,
            max_query_points: DEFAULT_MAX_QUERY_POINTS,
            max_concurrent_queries: 16,
            max_queued_queries: 256,
            max_concurrent_tail_requests:
                crate::loki_api::tail_slots::DEFAULT_MAX_CONCURRENT_TAIL_REQUESTS,
            query_queue_timeout: std::time::Duration::from_secs(30),
            query_timeout: std::time::Duration::from_secs(60),
            max_query_bytes: DEFAULT_MAX_QUERY_BYTES,
            max_query_depth: DEFAULT_MAX_QUERY_DEPTH,
            memtable_bytes: 64 << 20,
            answer_cache_bytes: DEFAULT_ANSWER_CACHE_BYTES,
            decoded_cache_bytes: DEFAULT_DECODED_CACHE_BYTES,
            flush_interval: Duration::from_secs(30),
            wal_fsync: true,
            wal_segment_bytes: 64 << 20,
            wal_record_max_bytes: WAL_RECORD_MAX_BYTES,
            retention_period: None,
            retention_streams: Vec::new(),
            tenant_overrides: BTreeMap::new(),
            max_disk_bytes: None,
            retention_interval: Duration::from_secs(600),
            delete_request_cancel_period: Duration::from_secs(24 * 3600),
            reject_old_samples_max_age: None,
            creation_grace_period: None,
            ingestion_rate_mb: 0.0,
            ingestion_burst_size_mb: 6.0,
            max_global_streams_per_user: crate::ingest_limits::DEFAULT_MAX_STREAMS,
            discover_service_name: true,
            warm_up: true,
            discover_log_levels: true,
            syslog_tcp_listen: None,
            syslog_udp_listen: None,
            ruler: None,
        }
    }
}
