//! The flags of `runakefli serve`. Each has a `RUNAKEFLI_*` variable and a
//! config-file key of the same name (`--max-line-bytes`,
//! `RUNAKEFLI_MAX_LINE_BYTES`, `max_line_bytes:`); sizes and durations take
//! human units (`64MiB`, `30d`, see `runakefli_server::units`).

use clap::Args;
use runakefli_server::config;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// A duration in human units; a bare number is seconds (the old `*-secs` flags).
pub fn duration(s: &str) -> Result<Duration, String> {
    if let Ok(secs) = s.trim().parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    runakefli_server::units::parse_duration(s)
}

/// `name=value`, the name a Prometheus label name.
fn label_pair(s: &str) -> Result<(String, String), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected name=value"))?;
    let name = name.trim();
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid || name.starts_with("__") {
        return Err(format!("{name:?}: not a label name"));
    }
    Ok((name.to_string(), value.to_string()))
}

/// A size in human units; a bare number is bytes.
pub fn bytes(s: &str) -> Result<u64, String> {
    runakefli_server::units::parse_bytes(s)
}

fn bytes_usize(s: &str) -> Result<usize, String> {
    usize::try_from(bytes(s)?).map_err(|_| format!("size {s:?} too large"))
}

/// `SELECTOR:PERIOD[:PRIORITY]`; the selector ends at its last `}`.
pub fn retention_stream(s: &str) -> Result<config::RetentionStream, String> {
    let bad = || {
        format!("invalid retention stream {s:?}: expected SELECTOR:PERIOD[:PRIORITY], e.g. '{{env=\"dev\"}}:24h:1'")
    };
    let end = s.rfind('}').ok_or_else(bad)?;
    let (selector, rest) = s.split_at(end + 1);
    let rest = rest.strip_prefix(':').ok_or_else(bad)?;
    let (period, priority) = match rest.split_once(':') {
        Some((p, pr)) => (p, pr.parse::<u32>().map_err(|_| bad())?),
        None => (rest, 0),
    };
    Ok(config::RetentionStream {
        selector: selector.trim().to_string(),
        priority,
        period: duration(period)?,
    })
}

/// `TENANT=PERIOD`.
fn tenant_period(s: &str) -> Result<(String, Duration), String> {
    let (t, p) = s.split_once('=').ok_or_else(|| {
        format!("invalid tenant retention {s:?}: expected TENANT=PERIOD, e.g. team-a=90d")
    })?;
    Ok((t.trim().to_string(), duration(p)?))
}

/// `NAME=VALUE` of a ClickHouse setting.
fn clickhouse_setting(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!(
            "invalid clickhouse setting {s:?}: expected NAME=VALUE, e.g. max_threads=8"
        )),
    }
}

/// A ClickHouse cluster name: not empty.
fn cluster_name(s: &str) -> Result<String, String> {
    match s.trim() {
        "" => Err("a cluster name (remote_servers entry) is needed".into()),
        name => Ok(name.to_string()),
    }
}

/// `--clickhouse-max-parallel-legs`: 1 to 64.
fn parallel_legs(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=64).contains(&n) => Ok(n),
        _ => Err(format!(
            "invalid leg count {s:?}: expected 1 to 64 (1: one request per metric query)"
        )),
    }
}

/// Where the server keeps its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    /// The embedded columnar store under --data-dir.
    Embedded,
    /// A ClickHouse database over its HTTP interface (--clickhouse-url).
    Clickhouse,
}

/// How the server writes its own log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (colour only on a terminal).
    Text,
    /// One JSON object per line.
    Json,
}

/// Flags of `runakefli serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Read settings from this YAML file (keys are the flag names with underscores: max_line_bytes: 256KiB). Flags and variables override it.
    #[arg(long, env = "RUNAKEFLI_CONFIG_FILE")]
    pub config_file: Option<PathBuf>,
    /// Print the effective configuration as YAML (loadable with --config-file) and exit.
    #[arg(long)]
    pub print_config: bool,
    /// Address to listen on (Loki's port, so collector and Grafana configs work unchanged). Use 0.0.0.0:3100 to accept collectors on other hosts.
    #[arg(long, env = "RUNAKEFLI_LISTEN", default_value = "127.0.0.1:3100")]
    pub listen: SocketAddr,
    /// Where data lives: embedded (the columnar store under --data-dir) or clickhouse (a ClickHouse database, see --clickhouse-url; docs/clickhouse.md lists what it does not serve yet).
    #[arg(
        long,
        env = "RUNAKEFLI_BACKEND",
        value_enum,
        default_value = "embedded"
    )]
    pub backend: BackendKind,
    /// Directory that holds all data (WAL, parts, indexes) of the embedded backend.
    #[arg(long, env = "RUNAKEFLI_DATA_DIR", default_value = "./runakefli-data")]
    pub data_dir: PathBuf,
    /// ClickHouse's HTTP interface for --backend clickhouse, e.g. http://HOST:8123 (https:// for TLS, checked against the Mozilla root certificates).
    #[arg(
        long,
        env = "RUNAKEFLI_CLICKHOUSE_URL",
        default_value = "http://127.0.0.1:8123"
    )]
    pub clickhouse_url: String,
    /// The ClickHouse database that holds Rúnakefli's tables; it and its schema are created when missing.
    #[arg(
        long,
        env = "RUNAKEFLI_CLICKHOUSE_DATABASE",
        default_value = "runakefli"
    )]
    pub clickhouse_database: String,
    /// ClickHouse user (X-ClickHouse-User); unset: ClickHouse's default user.
    #[arg(long, env = "RUNAKEFLI_CLICKHOUSE_USER")]
    pub clickhouse_user: Option<String>,
    /// ClickHouse password (X-ClickHouse-Key); prefer the variable to the flag, which other users can see in the process list. --print-config leaves it out.
    #[arg(long, env = "RUNAKEFLI_CLICKHOUSE_PASSWORD", hide_env_values = true)]
    pub clickhouse_password: Option<String>,
    /// A ClickHouse setting sent with every request as NAME=VALUE, e.g. max_threads=8; repeatable.
    #[arg(long = "clickhouse-setting", env = "RUNAKEFLI_CLICKHOUSE_SETTING", value_delimiter = ';', value_parser = clickhouse_setting)]
    pub clickhouse_setting: Vec<(String, String)>,
    /// Spread the tables over this ClickHouse cluster (a remote_servers name): every table a local table on each node plus a Distributed table sharded by stream, all DDL ON CLUSTER, inserts acknowledged once the shards have them (docs/clickhouse.md, "Cluster"). Unset: one server.
    #[arg(long, env = "RUNAKEFLI_CLICKHOUSE_CLUSTER", value_parser = cluster_name)]
    pub clickhouse_cluster: Option<String>,
    /// With --clickhouse-cluster: Replicated engines ({shard} and {replica} macros, Keeper paths naming database and table); needs ClickHouse Keeper or ZooKeeper.
    #[arg(long, env = "RUNAKEFLI_CLICKHOUSE_REPLICATED", default_value_t = false)]
    pub clickhouse_replicated: bool,
    /// PEM file of the certificates that sign ClickHouse's TLS certificate (a private CA) for an https:// URL; it replaces the built-in Mozilla roots, as curl's --cacert does.
    #[arg(long, env = "RUNAKEFLI_CLICKHOUSE_CA_FILE")]
    pub clickhouse_ca_file: Option<PathBuf>,
    /// PEM certificate (chain) shown to a ClickHouse that authenticates clients by certificate; needs --clickhouse-client-key.
    #[arg(
        long,
        env = "RUNAKEFLI_CLICKHOUSE_CLIENT_CERT",
        requires = "clickhouse_client_key"
    )]
    pub clickhouse_client_cert: Option<PathBuf>,
    /// PEM private key of --clickhouse-client-cert.
    #[arg(
        long,
        env = "RUNAKEFLI_CLICKHOUSE_CLIENT_KEY",
        requires = "clickhouse_client_cert"
    )]
    pub clickhouse_client_key: Option<PathBuf>,
    /// Longest one HTTP request to ClickHouse may take (queries also stop at --query-timeout).
    #[arg(long, env = "RUNAKEFLI_CLICKHOUSE_TIMEOUT", default_value = "5m", value_parser = duration)]
    pub clickhouse_timeout: Duration,
    /// Pushes that may wait for ClickHouse at once (queued for the next shared insert, or in the one being written); a push past it is answered 503 with Retry-After at once, nothing stored. Each waiting push holds a server thread. 0 for no limit.
    #[arg(long, env = "RUNAKEFLI_CLICKHOUSE_MAX_WAITING_PUSHES", default_value_t = runakefli_server::backends::clickhouse::DEFAULT_MAX_WAITING_PUSHES)]
    pub clickhouse_max_waiting_pushes: usize,
    /// Bytes of encoded rows that may wait for ClickHouse at once; a push past it is answered 503 with Retry-After at once (one push larger than this alone is admitted when nothing waits). 0 for no limit.
    #[arg(long, env = "RUNAKEFLI_CLICKHOUSE_MAX_WAITING_BYTES", default_value = "256MiB", value_parser = bytes_usize)]
    pub clickhouse_max_waiting_bytes: usize,
    /// Most requests to ClickHouse one range aggregation over two days or more is split into, read at once: legs of whole days of its steps, so each request reads about its own days' partitions (docs/clickhouse.md). 1 reads every metric query in one request.
    #[arg(long, env = "RUNAKEFLI_CLICKHOUSE_MAX_PARALLEL_LEGS", default_value_t = runakefli_server::backends::clickhouse::DEFAULT_MAX_PARALLEL_LEGS, value_parser = parallel_legs)]
    pub clickhouse_max_parallel_legs: usize,
    /// Read the tenant from the X-Scope-OrgID header (Loki's auth_enabled). Off: one tenant, "fake".
    #[arg(long, env = "RUNAKEFLI_MULTI_TENANT", default_value_t = false)]
    pub multi_tenant: bool,
    /// Require credentials on every request except /ready and /metrics: a YAML file of basic-auth users (Argon2 hashes, `runakefli auth hash-password`) and bearer tokens (SHA-256, `runakefli auth new-token`), each with the tenants it may use (docs/auth.md). Turns multi-tenancy on. Off by default, as behind a gateway.
    #[arg(long, env = "RUNAKEFLI_AUTH_FILE")]
    pub auth_file: Option<PathBuf>,
    /// Largest accepted push body as received.
    #[arg(long, env = "RUNAKEFLI_MAX_PUSH_BODY_BYTES", default_value = "64MiB", value_parser = bytes_usize)]
    pub max_push_body_bytes: usize,
    /// Bytes of HTTP push bodies received and being stored at once; a push past it is answered 503 with Retry-After (collectors retry), so many writers cannot grow memory. 0 for no limit.
    #[arg(long, env = "RUNAKEFLI_MAX_INFLIGHT_PUSH_BYTES", default_value = "256MiB", value_parser = bytes_usize)]
    pub max_inflight_push_bytes: usize,
    /// Largest accepted push body after decompression.
    #[arg(long, env = "RUNAKEFLI_MAX_PUSH_DECOMPRESSED_BYTES", default_value = "256MiB", value_parser = bytes_usize)]
    pub max_push_decompressed_bytes: usize,
    /// Most entries one push may expand to (OTLP log records); larger pushes are refused with 413. 0 for no limit.
    #[arg(long, env = "RUNAKEFLI_MAX_PUSH_ENTRIES", default_value_t = 1_000_000)]
    pub max_push_entries: usize,
    /// Most bytes of lines and structured metadata one push may expand to (OTLP copies resource attributes into every record); larger pushes are refused with 413. 0 for no limit.
    #[arg(long, env = "RUNAKEFLI_MAX_PUSH_EXPANDED_BYTES", default_value = "256MiB", value_parser = bytes_usize)]
    pub max_push_expanded_bytes: usize,
    /// Largest accepted log line (Loki's max_line_size).
    #[arg(long, env = "RUNAKEFLI_MAX_LINE_BYTES", default_value = "256KiB", value_parser = bytes_usize)]
    pub max_line_bytes: usize,
    /// Most labels per stream (Loki's max_label_names_per_series).
    #[arg(long, env = "RUNAKEFLI_MAX_LABELS_PER_STREAM", default_value_t = 15)]
    pub max_labels_per_stream: usize,
    /// Longest label name (Loki's max_label_name_length).
    #[arg(long, env = "RUNAKEFLI_MAX_LABEL_NAME_BYTES", default_value = "1KiB", value_parser = bytes_usize)]
    pub max_label_name_bytes: usize,
    /// Longest label value (Loki's max_label_value_length).
    #[arg(long, env = "RUNAKEFLI_MAX_LABEL_VALUE_BYTES", default_value = "2KiB", value_parser = bytes_usize)]
    pub max_label_value_bytes: usize,
    /// Most entries one log query may return (Loki's max_entries_limit_per_query).
    #[arg(
        long,
        env = "RUNAKEFLI_MAX_ENTRIES_PER_QUERY",
        default_value_t = 10_000
    )]
    pub max_entries_per_query: u32,
    /// Most series one metric query may return (Loki's max_query_series).
    #[arg(long, env = "RUNAKEFLI_MAX_QUERY_SERIES", default_value_t = 10_000)]
    pub max_query_series: usize,
    /// Most points (collected samples and step values, 16 bytes each) one metric query may hold in memory, checked while it runs; past it the query is refused with 400. 0 for no limit.
    #[arg(long, env = "RUNAKEFLI_MAX_QUERY_POINTS", default_value_t = runakefli_server::config::DEFAULT_MAX_QUERY_POINTS)]
    pub max_query_points: usize,
    /// Read requests (queries, labels, series, index stats, volumes) running at once; 0 for no limit.
    #[arg(long, env = "RUNAKEFLI_MAX_CONCURRENT_QUERIES", default_value_t = 16)]
    pub max_concurrent_queries: usize,
    /// Read requests that may wait for a slot; further ones are answered 429 "too many outstanding requests".
    #[arg(long, env = "RUNAKEFLI_MAX_QUEUED_QUERIES", default_value_t = 256)]
    pub max_queued_queries: usize,
    /// Live tails (/loki/api/v1/tail) open at once per tenant, as Loki's max_concurrent_tail_requests; one more is closed at once with code 1011 and Loki's "max concurrent tail requests limit exceeded". 0 for no limit.
    #[arg(long, env = "RUNAKEFLI_MAX_CONCURRENT_TAIL_REQUESTS", default_value_t = runakefli_server::loki_api::tail_slots::DEFAULT_MAX_CONCURRENT_TAIL_REQUESTS)]
    pub max_concurrent_tail_requests: usize,
    /// Longest a read request waits for a slot before it is answered 429.
    #[arg(long, alias = "query-queue-timeout-secs", env = "RUNAKEFLI_QUERY_QUEUE_TIMEOUT", default_value = "30s", value_parser = duration)]
    pub query_queue_timeout: Duration,
    /// Wall-clock budget of one read request, metadata endpoints included (Loki's query_timeout); 504 past it.
    #[arg(long, alias = "query-timeout-secs", env = "RUNAKEFLI_QUERY_TIMEOUT", default_value = "1m", value_parser = duration)]
    pub query_timeout: Duration,
    /// Queries of this many bytes or more are refused with 400 (Loki's fixed limit is 5120).
    #[arg(long, env = "RUNAKEFLI_MAX_QUERY_BYTES", default_value_t = config::DEFAULT_MAX_QUERY_BYTES)]
    pub max_query_bytes: usize,
    /// Deepest nesting (parentheses, operators, aggregations, label filter chains) a query may have; deeper queries are refused with 400.
    #[arg(long, env = "RUNAKEFLI_MAX_QUERY_DEPTH", default_value_t = config::DEFAULT_MAX_QUERY_DEPTH)]
    pub max_query_depth: usize,
    /// In-memory buffer size that triggers a flush to an immutable part.
    #[arg(long, env = "RUNAKEFLI_MEMTABLE_BYTES", default_value = "64MiB", value_parser = bytes_usize)]
    pub memtable_bytes: usize,
    /// Memory for the rows rebuilt for log queries' answers (lines and metadata), kept so the same rows asked again (a dashboard refresh) are not rebuilt from their blocks. 0 turns it off.
    #[arg(long, env = "RUNAKEFLI_ANSWER_CACHE_BYTES", default_value = "32MiB", value_parser = bytes_usize)]
    pub answer_cache_bytes: usize,
    /// Memory for blocks' decoded columns and row timestamps, kept so that the same blocks read again (a dashboard refresh) are not decoded again. 0 turns it off.
    #[arg(long, env = "RUNAKEFLI_DECODED_CACHE_BYTES", default_value = "64MiB", value_parser = bytes_usize)]
    pub decoded_cache_bytes: usize,
    /// Longest time data stays only in memory and the WAL before a flush.
    #[arg(long, alias = "flush-interval-secs", env = "RUNAKEFLI_FLUSH_INTERVAL", default_value = "30s", value_parser = duration)]
    pub flush_interval: Duration,
    /// fsync the WAL before acknowledging a push. Turning it off trades durability for speed.
    #[arg(long, env = "RUNAKEFLI_WAL_FSYNC", default_value_t = true, action = clap::ArgAction::Set)]
    pub wal_fsync: bool,
    /// Start a new WAL segment once the current one passes this size (segments are replayed and deleted whole).
    #[arg(long, env = "RUNAKEFLI_WAL_SEGMENT_BYTES", default_value = "64MiB", value_parser = bytes)]
    pub wal_segment_bytes: u64,
    /// Largest WAL record one push may make (at most 1GiB, the most replay accepts). Larger pushes are refused with 413 before they are written, so everything acknowledged replays.
    #[arg(long, env = "RUNAKEFLI_WAL_RECORD_MAX_BYTES", default_value = "1GiB", value_parser = bytes_usize)]
    pub wal_record_max_bytes: usize,
    /// Keep data this long (Loki's retention_period), e.g. 30d; 0 keeps it forever. Enforced in whole days.
    #[arg(long, env = "RUNAKEFLI_RETENTION_PERIOD", default_value = "0", value_parser = duration)]
    pub retention_period: Duration,
    /// A per-selector retention (Loki's retention_stream) as SELECTOR:PERIOD[:PRIORITY], e.g. '{env="dev"}:24h:1'; repeatable. The matching rule with the highest priority wins.
    #[arg(long = "retention-stream", env = "RUNAKEFLI_RETENTION_STREAM", value_delimiter = ';', value_parser = retention_stream)]
    pub retention_stream: Vec<config::RetentionStream>,
    /// A tenant's own retention_period as TENANT=PERIOD, e.g. team-a=90d; repeatable (the config file's overrides: section also takes per-tenant retention_stream).
    #[arg(long = "tenant-retention-period", env = "RUNAKEFLI_TENANT_RETENTION_PERIOD", value_delimiter = ';', value_parser = tenant_period)]
    pub tenant_retention_period: Vec<(String, Duration)>,
    /// Keep everything on disk under this size by dropping the oldest days first, e.g. 50GiB; 0 for no budget. Embedded backend only (refused with --backend clickhouse).
    #[arg(long, env = "RUNAKEFLI_MAX_DISK_BYTES", default_value = "0", value_parser = bytes)]
    pub max_disk_bytes: u64,
    /// /ready answers 503 while the data directory's file system has less free space than this (pushes are still taken until the disk is full); 0 to not check.
    #[arg(long, env = "RUNAKEFLI_READY_MIN_FREE_DISK", default_value = "64MiB", value_parser = bytes)]
    pub ready_min_free_disk: u64,
    /// How often retention runs.
    #[arg(long, env = "RUNAKEFLI_RETENTION_INTERVAL", default_value = "10m", value_parser = duration)]
    pub retention_interval: Duration,
    /// Delete requests can be cancelled this long after they were made; then their rows are purged from disk (Loki's delete_request_cancel_period). Rows are hidden from queries at once either way.
    #[arg(long, env = "RUNAKEFLI_DELETE_REQUEST_CANCEL_PERIOD", default_value = "24h", value_parser = duration)]
    pub delete_request_cancel_period: Duration,
    /// Refuse entries older than this (Loki's reject_old_samples_max_age), e.g. 1w; 0 accepts any age.
    #[arg(long, env = "RUNAKEFLI_REJECT_OLD_SAMPLES_MAX_AGE", default_value = "0", value_parser = duration)]
    pub reject_old_samples_max_age: Duration,
    /// Refuse entries this far or further in the future (Loki's creation_grace_period), e.g. 10m; 0 accepts any.
    #[arg(long, env = "RUNAKEFLI_CREATION_GRACE_PERIOD", default_value = "0", value_parser = duration)]
    pub creation_grace_period: Duration,
    /// Bytes per second each tenant may push, in MiB of lines and structured metadata (Loki's ingestion_rate_mb); a push over it is refused whole with 429. 0: no rate limit.
    #[arg(long, env = "RUNAKEFLI_INGESTION_RATE_MB", default_value_t = 0.0)]
    pub ingestion_rate_mb: f64,
    /// How far above the rate a tenant may push at once, in MiB (Loki's ingestion_burst_size_mb); at least one second of the rate.
    #[arg(long, env = "RUNAKEFLI_INGESTION_BURST_SIZE_MB", default_value_t = 6.0)]
    pub ingestion_burst_size_mb: f64,
    /// Streams each tenant may have active (an entry in the last 30 minutes; Loki's max_global_streams_per_user); new streams past it are refused with 429. 0: no limit.
    #[arg(
        long,
        env = "RUNAKEFLI_MAX_GLOBAL_STREAMS_PER_USER",
        default_value_t = 100_000
    )]
    pub max_global_streams_per_user: usize,
    /// Before /ready answers 200, answer a query of its own over loopback (labels, then a line filter over the last hour), so the first user query after a start does not pay for the process's first one (~1 ms of an 8 ms search measured).
    #[arg(long, env = "RUNAKEFLI_WARM_UP", default_value_t = true, action = clap::ArgAction::Set)]
    pub warm_up: bool,
    /// Add service_name to pushed streams without one, from the first of Loki's discovery labels present (service, app, application, app_name, name, app_kubernetes_io_name, container, container_name, k8s_container_name, component, workload, job, k8s_job_name), else unknown_service (Loki's discover_service_name).
    #[arg(long, env = "RUNAKEFLI_DISCOVER_SERVICE_NAME", default_value_t = true, action = clap::ArgAction::Set)]
    pub discover_service_name: bool,
    /// Add detected_level structured metadata to pushed entries, from level labels, metadata, JSON/logfmt level fields or level words in the line (Loki's discover_log_levels).
    #[arg(long, env = "RUNAKEFLI_DISCOVER_LOG_LEVELS", default_value_t = true, action = clap::ArgAction::Set)]
    pub discover_log_levels: bool,
    /// Listen for syslog over TCP (RFC 5424/3164, octet-counted or newline framing) at this address. Off by default.
    #[arg(long, env = "RUNAKEFLI_SYSLOG_TCP_LISTEN")]
    pub syslog_tcp_listen: Option<SocketAddr>,
    /// Listen for syslog over UDP (one message per datagram) at this address. Off by default.
    #[arg(long, env = "RUNAKEFLI_SYSLOG_UDP_LISTEN")]
    pub syslog_udp_listen: Option<SocketAddr>,
    /// Turn the ruler on: alerting and recording rules (Prometheus format, LogQL expressions) in <DIR>/<tenant>/<namespace>.yaml, reloaded on change and on SIGHUP, managed over /loki/api/v1/rules (docs/alerting.md).
    #[arg(long, env = "RUNAKEFLI_RULES_DIR")]
    pub rules_dir: Option<PathBuf>,
    /// Evaluation interval of rule groups that set none (Loki's evaluation_interval).
    #[arg(long, env = "RUNAKEFLI_RULER_EVALUATION_INTERVAL", default_value = "1m", value_parser = duration)]
    pub ruler_evaluation_interval: Duration,
    /// How often the rules directory is checked for changed files.
    #[arg(long, env = "RUNAKEFLI_RULER_POLL_INTERVAL", default_value = "10s", value_parser = duration)]
    pub ruler_poll_interval: Duration,
    /// Alertmanager to send alerts to (API v2), e.g. http://127.0.0.1:9093; repeat the flag or separate URLs with commas (as Loki's -ruler.alertmanager-url) to send every alert to each; none: alerts are only shown by the API.
    #[arg(long, env = "RUNAKEFLI_ALERTMANAGER_URL", value_delimiter = ',')]
    pub alertmanager_url: Vec<String>,
    /// Labels added to every alert sent to Alertmanager that lacks them (Loki's ruler external_labels), e.g. cluster=eu-1,env=prod (comma-separated or repeated; values without commas).
    #[arg(long, env = "RUNAKEFLI_RULER_EXTERNAL_LABELS", value_delimiter = ',', value_parser = label_pair)]
    pub ruler_external_labels: Vec<(String, String)>,
    /// A firing alert is sent to Alertmanager again this often.
    #[arg(long, env = "RUNAKEFLI_RULER_RESEND_DELAY", default_value = "1m", value_parser = duration)]
    pub ruler_resend_delay: Duration,
    /// Alerts waiting to be sent to Alertmanager; past it the oldest are dropped (prometheus_notifications_dropped_total).
    #[arg(
        long,
        env = "RUNAKEFLI_RULER_NOTIFICATION_QUEUE_CAPACITY",
        default_value_t = 10_000
    )]
    pub ruler_notification_queue_capacity: usize,
    /// This server's URL as users reach it, for alerts' generatorURL.
    #[arg(
        long,
        env = "RUNAKEFLI_RULER_EXTERNAL_URL",
        default_value = "http://127.0.0.1:3100"
    )]
    pub ruler_external_url: String,
    /// Prometheus remote-write URL for recording rules' samples and the ALERTS series, e.g. http://127.0.0.1:9090/api/v1/write.
    #[arg(long, env = "RUNAKEFLI_REMOTE_WRITE_URL")]
    pub remote_write_url: Option<String>,
    /// Basic-auth user for the remote-write URL.
    #[arg(long, env = "RUNAKEFLI_REMOTE_WRITE_USERNAME")]
    pub remote_write_username: Option<String>,
    /// Basic-auth password for the remote-write URL.
    #[arg(long, env = "RUNAKEFLI_REMOTE_WRITE_PASSWORD", hide_env_values = true)]
    pub remote_write_password: Option<String>,
    /// Bearer token for the remote-write URL.
    #[arg(
        long,
        env = "RUNAKEFLI_REMOTE_WRITE_BEARER_TOKEN",
        hide_env_values = true,
        conflicts_with = "remote_write_username"
    )]
    pub remote_write_bearer_token: Option<String>,
    /// Samples waiting to be remote-written; past it the oldest are dropped (runakefli_ruler_remote_write_samples_dropped_total). The queue is logged under <data-dir>/ruler/remote-write, so a restart loses none.
    #[arg(
        long,
        env = "RUNAKEFLI_REMOTE_WRITE_QUEUE_CAPACITY",
        default_value_t = 100_000
    )]
    pub remote_write_queue_capacity: usize,
    /// Log filter, e.g. "info" or "runakefli_storage=debug".
    #[arg(long, env = "RUNAKEFLI_LOG", default_value = "info")]
    pub log: String,
    /// Log format: text (colour only on a terminal) or json.
    #[arg(long, env = "RUNAKEFLI_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
}
