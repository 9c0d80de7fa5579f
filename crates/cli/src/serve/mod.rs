//! `runakefli serve`: flags, `RUNAKEFLI_*` variables and the YAML config
//! file ([`config_file`]) → server config; logging; the server's run.

pub mod args;
pub mod code_pages;
pub mod config_file;
pub mod malloc;

use anyhow::Context;
use args::{BackendKind, LogFormat, ServeArgs};
use clap::{ArgMatches, Command};
use runakefli_server::backends::clickhouse;
use runakefli_server::config::{BackendConfig, ClickHouseSettings, TenantOverrides};
use runakefli_server::ServerConfig;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The server's settings from parsed flags and the file's overrides (a
/// `--tenant-retention-period` flag wins over the file for that tenant).
fn server_config(
    args: ServeArgs,
    mut overrides: BTreeMap<String, TenantOverrides>,
) -> anyhow::Result<ServerConfig> {
    for (t, p) in args.tenant_retention_period {
        overrides.entry(t).or_default().retention_period = Some(p);
    }
    let data_dir = args.data_dir.clone();
    let nonzero = |d: std::time::Duration| Some(d).filter(|d| !d.is_zero());
    let backend = match args.backend {
        BackendKind::Embedded => BackendConfig::Embedded,
        BackendKind::Clickhouse => BackendConfig::ClickHouse(Box::new(ClickHouseSettings {
            connection: runakefli_server::ClickHouseConfig {
                tls: runakefli_server::clickhouse_tls::client_config(
                    &runakefli_server::clickhouse_tls::TlsFiles {
                        ca: args.clickhouse_ca_file,
                        client_cert: args.clickhouse_client_cert,
                        client_key: args.clickhouse_client_key,
                    },
                )?,
                user: args.clickhouse_user,
                password: args.clickhouse_password,
                settings: args.clickhouse_setting,
                timeout: args.clickhouse_timeout,
                cluster: args
                    .clickhouse_cluster
                    .map(|name| runakefli_server::ClickHouseCluster {
                        replicated: args.clickhouse_replicated,
                        ..runakefli_server::ClickHouseCluster::new(name)
                    }),
                ..runakefli_server::ClickHouseConfig::new(
                    args.clickhouse_url,
                    args.clickhouse_database,
                )
            },
            backlog: clickhouse::Backlog {
                max_pushes: args.clickhouse_max_waiting_pushes,
                max_bytes: args.clickhouse_max_waiting_bytes,
            },
            metric_legs: clickhouse::MetricLegs {
                max_parallel: args.clickhouse_max_parallel_legs,
                ..clickhouse::MetricLegs::default()
            },
        })),
    };
    Ok(ServerConfig {
        listen: args.listen,
        backend,
        data_dir: data_dir.clone(),
        multi_tenant: args.multi_tenant,
        auth_file: args.auth_file,
        max_push_body_bytes: args.max_push_body_bytes,
        max_inflight_push_bytes: args.max_inflight_push_bytes,
        ready_min_free_disk_bytes: args.ready_min_free_disk,
        max_push_decompressed_bytes: args.max_push_decompressed_bytes,
        max_push_entries: args.max_push_entries,
        max_push_expanded_bytes: args.max_push_expanded_bytes,
        max_line_bytes: args.max_line_bytes,
        max_labels_per_stream: args.max_labels_per_stream,
        max_label_name_bytes: args.max_label_name_bytes,
        max_label_value_bytes: args.max_label_value_bytes,
        max_entries_per_query: args.max_entries_per_query,
        max_query_series: args.max_query_series,
        max_query_points: args.max_query_points,
        max_concurrent_queries: args.max_concurrent_queries,
        max_queued_queries: args.max_queued_queries,
        max_concurrent_tail_requests: args.max_concurrent_tail_requests,
        query_queue_timeout: args.query_queue_timeout,
        query_timeout: args.query_timeout,
        max_query_bytes: args.max_query_bytes,
        max_query_depth: args.max_query_depth,
        memtable_bytes: args.memtable_bytes,
        answer_cache_bytes: args.answer_cache_bytes,
        decoded_cache_bytes: args.decoded_cache_bytes,
        flush_interval: args.flush_interval,
        wal_fsync: args.wal_fsync,
        wal_segment_bytes: args.wal_segment_bytes,
        wal_record_max_bytes: args.wal_record_max_bytes,
        retention_period: nonzero(args.retention_period),
        retention_streams: args.retention_stream,
        tenant_overrides: overrides,
        max_disk_bytes: Some(args.max_disk_bytes).filter(|b| *b > 0),
        retention_interval: args.retention_interval,
        delete_request_cancel_period: args.delete_request_cancel_period,
        reject_old_samples_max_age: nonzero(args.reject_old_samples_max_age),
        creation_grace_period: nonzero(args.creation_grace_period),
        ingestion_rate_mb: args.ingestion_rate_mb,
        ingestion_burst_size_mb: args.ingestion_burst_size_mb,
        max_global_streams_per_user: args.max_global_streams_per_user,
        discover_service_name: args.discover_service_name,
        warm_up: args.warm_up,
        discover_log_levels: args.discover_log_levels,
        syslog_tcp_listen: args.syslog_tcp_listen,
        syslog_udp_listen: args.syslog_udp_listen,
        ruler: args.rules_dir.map(|dir| runakefli_ruler::Config {
            default_interval: args.ruler_evaluation_interval,
            poll_interval: args.ruler_poll_interval,
            alertmanager_urls: args
                .alertmanager_url
                .into_iter()
                .map(|u| u.trim().to_string())
                .filter(|u| !u.is_empty())
                .collect(),
            external_labels: args.ruler_external_labels,
            resend_delay: args.ruler_resend_delay,
            notification_queue_capacity: args.ruler_notification_queue_capacity,
            external_url: args.ruler_external_url,
            remote_write: args
                .remote_write_url
                .map(|url| runakefli_ruler::RemoteWriteConfig {
                    url,
                    basic_auth: args
                        .remote_write_username
                        .map(|u| (u, args.remote_write_password.unwrap_or_default())),
                    bearer_token: args.remote_write_bearer_token,
                    queue_capacity: args.remote_write_queue_capacity,
                    log_dir: Some(data_dir.join("ruler").join("remote-write")),
                }),
            state_dir: Some(data_dir.join("ruler")),
            ..runakefli_ruler::Config::new(dir)
        }),
    })
}

/// Installs the log subscriber: plain text (colour only when stdout is a
/// terminal) or JSON lines, filtered by `filter` (`target=level`
/// directives, comma-separated; a bare level is the default).
///
/// The filter is tracing-subscriber's `Targets`, not its `EnvFilter`:
/// `EnvFilter` brings in `matchers`, which turns on regex-automata's
/// full-DFA build, and the `regex` crate then builds a full DFA for every
/// small pattern it compiles (measured: 4.6 M instructions, ~1 ms, for
/// the regex of a `|~` line filter in a query's first run).
fn init_logging(filter: &str, format: LogFormat) -> anyhow::Result<()> {
    let filter = log_filter(filter)?;
    let registry = tracing_subscriber::registry().with(filter);
    match format {
        LogFormat::Text => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_target(false)
                    .with_ansi(std::io::stdout().is_terminal()),
            )
            .init(),
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_target(false)
                    .with_current_span(false),
            )
            .init(),
    }
    Ok(())
}

/// The `--log` filter parsed (an unknown level or a malformed directive is
/// an error, not silently dropped).
fn log_filter(filter: &str) -> anyhow::Result<tracing_subscriber::filter::Targets> {
    filter.parse().map_err(|e| {
        anyhow::anyhow!(
            "--log {filter:?}: {e} (expected e.g. \"info\" or \"info,runakefli_storage=debug\")"
        )
    })
}

/// Runs `serve` from the whole command line: merges the config file (when
/// given) under the flags, then prints the configuration or serves until
/// SIGINT/SIGTERM.
pub fn run(argv: Vec<std::ffi::OsString>, cli: Command) -> anyhow::Result<()> {
    let matches = cli.clone().get_matches_from(&argv);
    let (serve_cmd, sub) = serve_parts(&cli, &matches);
    let path = sub.get_one::<std::path::PathBuf>("config_file").cloned();
    let (matches, overrides) = match path {
        Some(path) => {
            let file = config_file::load(&path, &serve_cmd, &sub)?;
            let mut argv = argv;
            argv.extend(file.flags);
            let m = cli
                .clone()
                .try_get_matches_from(&argv)
                .map_err(|e| anyhow::anyhow!("config file {}: {}", path.display(), e.render()))?;
            (m, file.overrides)
        }
        None => (matches, BTreeMap::new()),
    };
    let (serve_cmd, sub) = serve_parts(&cli, &matches);
    let args = <ServeArgs as clap::FromArgMatches>::from_arg_matches(&sub)?;
    if args.clickhouse_replicated && args.clickhouse_cluster.is_none() {
        anyhow::bail!(
            "--clickhouse-replicated needs --clickhouse-cluster (RUNAKEFLI_CLICKHOUSE_CLUSTER): \
             the replicated tables are created ON CLUSTER"
        );
    }
    if args.print_config {
        let mut merged = overrides.clone();
        for (t, p) in &args.tenant_retention_period {
            merged.entry(t.clone()).or_default().retention_period = Some(*p);
        }
        #[allow(
            clippy::print_stdout,
            reason = "--print-config answers on standard output"
        )]
        {
            print!("{}", config_file::print(&serve_cmd, &sub, &merged));
        }
        return Ok(());
    }
    let tuned = malloc::tune();
    let code_bytes = code_pages::prefetch();
    init_logging(&args.log, args.log_format)?;
    tracing::debug!(tuned, "allocator growth pad and mmap threshold");
    tracing::debug!(code_bytes, "executable's mappings advised WILLNEED");
    let config = server_config(args, overrides)?;
    let listen = config.listen;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("runakefli-http")
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(runakefli_server::serve(config)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            anyhow::anyhow!(
                "cannot listen on {listen}: the address is already in use (another runakefli or Loki?); choose another with --listen or RUNAKEFLI_LISTEN"
            )
        } else {
            anyhow::Error::new(e).context("server failed")
        }
    })
}

/// The `serve` subcommand and its matches.
fn serve_parts(cli: &Command, matches: &ArgMatches) -> (Command, ArgMatches) {
    let cmd = cli
        .find_subcommand("serve")
        .expect("serve subcommand")
        .clone();
    let sub = matches
        .subcommand_matches("serve")
        .expect("called for serve")
        .clone();
    (cmd, sub)
}

#[cfg(test)]
mod tests {
    use super::log_filter;
    use tracing::level_filters::LevelFilter;

    #[test]
    fn log_filters_take_levels_and_target_directives() {
        let f = log_filter("warn").unwrap();
        assert_eq!(f.default_level(), Some(LevelFilter::WARN));
        let f = log_filter("info,runakefli_storage=debug").unwrap();
        assert!(f.would_enable("runakefli_storage::part", &tracing::Level::DEBUG));
        assert!(!f.would_enable("runakefli_server", &tracing::Level::DEBUG));
        assert!(f.would_enable("runakefli_server", &tracing::Level::INFO));
    }

    #[test]
    fn malformed_log_filters_are_refused_with_the_flag_named() {
        for bad in ["runakefli_storage=loud", "info,runakefli=verbose"] {
            let e = log_filter(bad).unwrap_err().to_string();
            assert!(e.starts_with("--log "), "{bad}: {e}");
        }
    }
}
