//! `runakefli serve`: flags (each with a `RUNAKEFLI_*` variable) → server config.

use anyhow::Context;
use clap::Args;
use runakefli_server::{config, ServerConfig};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

fn duration(s: &str) -> Result<Duration, String> {
    runakefli_server::units::parse_duration(s)
}

fn bytes(s: &str) -> Result<u64, String> {
    runakefli_server::units::parse_bytes(s)
}

/// `SELECTOR:PERIOD[:PRIORITY]`; the selector ends at its last `}`.
fn retention_stream(s: &str) -> Result<config::RetentionStream, String> {
    let bad = || format!("invalid retention stream {s:?}: expected SELECTOR:PERIOD[:PRIORITY], e.g. '{{env=\"dev\"}}:24h:1'");
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
    let (t, p) = s
        .split_once('=')
        .ok_or_else(|| format!("invalid tenant retention {s:?}: expected TENANT=PERIOD, e.g. team-a=90d"))?;
    Ok((t.trim().to_string(), duration(p)?))
}

/// Flags of `runakefli serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (Loki's port, so collector and Grafana configs work unchanged).
    #[arg(long, env = "RUNAKEFLI_LISTEN", default_value = "127.0.0.1:3100")]
    listen: SocketAddr,
    /// Directory that holds all data (WAL, parts, indexes).
    #[arg(long, env = "RUNAKEFLI_DATA_DIR", default_value = "./runakefli-data")]
    data_dir: PathBuf,
    /// Read the tenant from the X-Scope-OrgID header (Loki's auth_enabled). Off: one tenant, "fake".
    #[arg(long, env = "RUNAKEFLI_MULTI_TENANT", default_value_t = false)]
    multi_tenant: bool,
    /// Largest accepted push body as received, in bytes.
    #[arg(long, env = "RUNAKEFLI_MAX_PUSH_BODY_BYTES", default_value_t = 64 << 20)]
    max_push_body_bytes: usize,
    /// Largest accepted push body after decompression, in bytes.
    #[arg(long, env = "RUNAKEFLI_MAX_PUSH_DECOMPRESSED_BYTES", default_value_t = 256 << 20)]
    max_push_decompressed_bytes: usize,
    /// Most entries one push may expand to (OTLP log records); larger pushes are refused with 413. 0 for no limit.
    #[arg(long, env = "RUNAKEFLI_MAX_PUSH_ENTRIES", default_value_t = 1_000_000)]
    max_push_entries: usize,
    /// Most bytes of lines and structured metadata one push may expand to (OTLP copies resource attributes into every record); larger pushes are refused with 413. 0 for no limit.
    #[arg(long, env = "RUNAKEFLI_MAX_PUSH_EXPANDED_BYTES", default_value_t = 256 << 20)]
    max_push_expanded_bytes: usize,
    /// Largest accepted log line, in bytes (Loki's max_line_size).
    #[arg(long, env = "RUNAKEFLI_MAX_LINE_BYTES", default_value_t = 256 << 10)]
    max_line_bytes: usize,
    /// Most labels per stream (Loki's max_label_names_per_series).
    #[arg(long, env = "RUNAKEFLI_MAX_LABELS_PER_STREAM", default_value_t = 15)]
    max_labels_per_stream: usize,
    /// Longest label name in bytes (Loki's max_label_name_length).
    #[arg(long, env = "RUNAKEFLI_MAX_LABEL_NAME_BYTES", default_value_t = 1024)]
    max_label_name_bytes: usize,
    /// Longest label value in bytes (Loki's max_label_value_length).
    #[arg(long, env = "RUNAKEFLI_MAX_LABEL_VALUE_BYTES", default_value_t = 2048)]
    max_label_value_bytes: usize,
    /// Most entries one log query may return (Loki's max_entries_limit_per_query).
    #[arg(
        long,
        env = "RUNAKEFLI_MAX_ENTRIES_PER_QUERY",
        default_value_t = 10_000
    )]
    max_entries_per_query: u32,
    /// Most series one metric query may return (Loki's max_query_series).
    #[arg(long, env = "RUNAKEFLI_MAX_QUERY_SERIES", default_value_t = 10_000)]
    max_query_series: usize,
    /// Read requests (queries, labels, series, index stats, volumes) running at once; 0 for no limit.
    #[arg(long, env = "RUNAKEFLI_MAX_CONCURRENT_QUERIES", default_value_t = 16)]
    max_concurrent_queries: usize,
    /// Read requests that may wait for a slot; further ones are answered 429 "too many outstanding requests".
    #[arg(long, env = "RUNAKEFLI_MAX_QUEUED_QUERIES", default_value_t = 256)]
    max_queued_queries: usize,
    /// Longest a read request waits for a slot before it is answered 429, in seconds.
    #[arg(long, env = "RUNAKEFLI_QUERY_QUEUE_TIMEOUT_SECS", default_value_t = 30)]
    query_queue_timeout_secs: u64,
    /// Wall-clock budget of one read request, metadata endpoints included, in seconds (Loki's query_timeout); 504 past it.
    #[arg(long, env = "RUNAKEFLI_QUERY_TIMEOUT_SECS", default_value_t = 60)]
    query_timeout_secs: u64,
    /// Queries of this many bytes or more are refused with 400 (Loki's fixed limit is 5120).
    #[arg(long, env = "RUNAKEFLI_MAX_QUERY_BYTES", default_value_t = config::DEFAULT_MAX_QUERY_BYTES)]
    max_query_bytes: usize,
    /// Deepest nesting (parentheses, operators, aggregations, label filter chains) a query may have; deeper queries are refused with 400.
    #[arg(long, env = "RUNAKEFLI_MAX_QUERY_DEPTH", default_value_t = config::DEFAULT_MAX_QUERY_DEPTH)]
    max_query_depth: usize,
    /// In-memory buffer size that triggers a flush to an immutable part, in bytes.
    #[arg(long, env = "RUNAKEFLI_MEMTABLE_BYTES", default_value_t = 64 << 20)]
    memtable_bytes: usize,
    /// Longest time data stays only in memory and the WAL before a flush, in seconds.
    #[arg(long, env = "RUNAKEFLI_FLUSH_INTERVAL_SECS", default_value_t = 30)]
    flush_interval_secs: u64,
    /// fsync the WAL before acknowledging a push. Turning it off trades durability for speed.
    #[arg(long, env = "RUNAKEFLI_WAL_FSYNC", default_value_t = true, action = clap::ArgAction::Set)]
    wal_fsync: bool,
    /// Start a new WAL segment once the current one passes this many bytes (segments are replayed and deleted whole).
    #[arg(long, env = "RUNAKEFLI_WAL_SEGMENT_BYTES", default_value_t = 64 << 20)]
    wal_segment_bytes: u64,
    /// Largest WAL record one push may make, in bytes (at most 1 GiB, the most replay accepts). Larger pushes are refused with 413 before they are written, so everything acknowledged replays.
    #[arg(long, env = "RUNAKEFLI_WAL_RECORD_MAX_BYTES", default_value_t = 1 << 30)]
    wal_record_max_bytes: usize,
    /// Keep data this long (Loki's retention_period), e.g. 30d; 0 keeps it forever. Enforced in whole days.
    #[arg(long, env = "RUNAKEFLI_RETENTION_PERIOD", default_value = "0", value_parser = duration)]
    retention_period: Duration,
    /// A per-selector retention (Loki's retention_stream) as SELECTOR:PERIOD[:PRIORITY], e.g. '{env="dev"}:24h:1'; repeatable. The matching rule with the highest priority wins.
    #[arg(long = "retention-stream", env = "RUNAKEFLI_RETENTION_STREAM", value_delimiter = ';', value_parser = retention_stream)]
    retention_streams: Vec<config::RetentionStream>,
    /// A tenant's own retention_period as TENANT=PERIOD, e.g. team-a=90d; repeatable.
    #[arg(long = "tenant-retention-period", env = "RUNAKEFLI_TENANT_RETENTION_PERIOD", value_delimiter = ';', value_parser = tenant_period)]
    tenant_retention_periods: Vec<(String, Duration)>,
    /// Keep everything on disk under this size by dropping the oldest days first, e.g. 50GiB; 0 for no budget.
    #[arg(long, env = "RUNAKEFLI_MAX_DISK_BYTES", default_value = "0", value_parser = bytes)]
    max_disk_bytes: u64,
    /// How often retention runs.
    #[arg(long, env = "RUNAKEFLI_RETENTION_INTERVAL", default_value = "10m", value_parser = duration)]
    retention_interval: Duration,
    /// Delete requests can be cancelled this long after they were made; then their rows are purged from disk (Loki's delete_request_cancel_period). Rows are hidden from queries at once either way.
    #[arg(long, env = "RUNAKEFLI_DELETE_REQUEST_CANCEL_PERIOD", default_value = "24h", value_parser = duration)]
    delete_request_cancel_period: Duration,
    /// Refuse entries older than this (Loki's reject_old_samples_max_age), e.g. 1w; 0 accepts any age.
    #[arg(long, env = "RUNAKEFLI_REJECT_OLD_SAMPLES_MAX_AGE", default_value = "0", value_parser = duration)]
    reject_old_samples_max_age: Duration,
    /// Refuse entries this far or further in the future (Loki's creation_grace_period), e.g. 10m; 0 accepts any.
    #[arg(long, env = "RUNAKEFLI_CREATION_GRACE_PERIOD", default_value = "0", value_parser = duration)]
    creation_grace_period: Duration,
    /// Listen for syslog over TCP (RFC 5424/3164, octet-counted or newline framing) at this address. Off by default.
    #[arg(long, env = "RUNAKEFLI_SYSLOG_TCP_LISTEN")]
    syslog_tcp_listen: Option<SocketAddr>,
    /// Listen for syslog over UDP (one message per datagram) at this address. Off by default.
    #[arg(long, env = "RUNAKEFLI_SYSLOG_UDP_LISTEN")]
    syslog_udp_listen: Option<SocketAddr>,
    /// Log filter, e.g. "info" or "runakefli_storage=debug".
    #[arg(long, env = "RUNAKEFLI_LOG", default_value = "info")]
    log: String,
}

/// Runs the server until SIGINT/SIGTERM.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(&args.log))
        .with_target(false)
        .init();
    let config = ServerConfig {
        listen: args.listen,
        data_dir: args.data_dir,
        multi_tenant: args.multi_tenant,
        max_push_body_bytes: args.max_push_body_bytes,
        max_push_decompressed_bytes: args.max_push_decompressed_bytes,
        max_push_entries: args.max_push_entries,
        max_push_expanded_bytes: args.max_push_expanded_bytes,
        max_line_bytes: args.max_line_bytes,
        max_labels_per_stream: args.max_labels_per_stream,
        max_label_name_bytes: args.max_label_name_bytes,
        max_label_value_bytes: args.max_label_value_bytes,
        max_entries_per_query: args.max_entries_per_query,
        max_query_series: args.max_query_series,
        max_concurrent_queries: args.max_concurrent_queries,
        max_queued_queries: args.max_queued_queries,
        query_queue_timeout: std::time::Duration::from_secs(args.query_queue_timeout_secs),
        query_timeout: std::time::Duration::from_secs(args.query_timeout_secs),
        max_query_bytes: args.max_query_bytes,
        max_query_depth: args.max_query_depth,
        memtable_bytes: args.memtable_bytes,
        flush_interval_secs: args.flush_interval_secs,
        wal_fsync: args.wal_fsync,
        wal_segment_bytes: args.wal_segment_bytes,
        wal_record_max_bytes: args.wal_record_max_bytes,
        retention_period: Some(args.retention_period).filter(|d| !d.is_zero()),
        retention_streams: args.retention_streams,
        tenant_overrides: args
            .tenant_retention_periods
            .into_iter()
            .map(|(t, p)| {
                (
                    t,
                    config::TenantOverrides {
                        retention_period: Some(p),
                        retention_stream: None,
                    },
                )
            })
            .collect(),
        max_disk_bytes: Some(args.max_disk_bytes).filter(|b| *b > 0),
        retention_interval: args.retention_interval,
        delete_request_cancel_period: args.delete_request_cancel_period,
        reject_old_samples_max_age: Some(args.reject_old_samples_max_age).filter(|d| !d.is_zero()),
        creation_grace_period: Some(args.creation_grace_period).filter(|d| !d.is_zero()),
        syslog_tcp_listen: args.syslog_tcp_listen,
        syslog_udp_listen: args.syslog_udp_listen,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("runakefli-http")
        .build()
        .context("starting the async runtime")?;
    runtime
        .block_on(runakefli_server::serve(config))
        .context("server failed")
}
