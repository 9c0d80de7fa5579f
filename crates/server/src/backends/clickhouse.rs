//! The ClickHouse backend (`runakefli_clickhouse`) as the server's backend:
//! its configuration types (re-exported for the CLI; the server's settings
//! hold them in [`ClickHouseSettings`]), opening it (schema, housekeeping
//! thread) into a [`Store`], and its counters as metric families read at
//! scrape time: how many query plans ClickHouse answered in SQL, how many
//! the backend declined (the engine then scanned and evaluated them itself),
//! and the rows each path shipped ([`SqlStats`]); the pushes' batches,
//! retries and backlog ([`PushStats`]); housekeeping ([`HousekeepingStats`]).

use crate::config::{ClickHouseSettings, ServerConfig};
use crate::metrics::{BackendMetrics, Exposition};
use crate::open_error::OpenError;
use crate::store::Store;
use runakefli_clickhouse::{
    ClickHouseBackend, Client, Housekeeping, HousekeepingStats, PushStats, SqlStats,
};
use std::sync::Arc;

/// TLS files of the ClickHouse backend (a private CA, a client certificate).
pub use runakefli_clickhouse::tls;
pub use runakefli_clickhouse::{Backlog, Cluster, Config, MetricLegs};

/// Default of [`Backlog`]'s pushes (`--clickhouse-max-waiting-pushes`).
pub const DEFAULT_MAX_WAITING_PUSHES: usize =
    runakefli_clickhouse::group_commit::DEFAULT_MAX_WAITING_PUSHES;
/// Default of [`MetricLegs`]' legs read at once.
pub const DEFAULT_MAX_PARALLEL_LEGS: usize =
    runakefli_clickhouse::buckets::DEFAULT_MAX_PARALLEL_LEGS;

/// Why the ClickHouse backend did not open (unreachable, or its schema
/// could not be prepared).
#[derive(Debug, thiserror::Error)]
#[error("clickhouse backend: {0}")]
struct OpenFailed(#[from] runakefli_clickhouse::Error);

/// Opens the database `c` names (creating or migrating its schema) and
/// starts its housekeeping thread (retention, delete requests).
pub(super) fn open(config: &ServerConfig, c: &ClickHouseSettings) -> Result<Store, OpenError> {
    refuse_embedded_only_settings(config)?;
    let housekeeping = Housekeeping {
        retention: super::retention_config(config)?,
        delete_cancel_period: config.delete_request_cancel_period,
    };
    let backend = Arc::new(
        ClickHouseBackend::open(Client::new(c.connection.clone()))
            .map_err(|e| OpenError::Backend(Box::new(OpenFailed(e))))?
            .with_housekeeping(housekeeping)
            .with_backlog(c.backlog)
            .with_metric_legs(c.metric_legs),
    );
    backend
        .spawn_housekeeping()
        .map_err(|source| OpenError::Thread {
            what: "the clickhouse housekeeping thread",
            source,
        })?;
    Ok(store(backend))
}

/// The [`Store`] over an opened backend: it reads, writes, deletes and
/// shows its counters on `/metrics`.
pub fn store(backend: Arc<ClickHouseBackend>) -> Store {
    Store::new(backend.clone())
        .with_deletes(backend.clone())
        .with_metrics(Arc::new(Counters(backend)))
}

/// Settings only the embedded store honours are refused on ClickHouse
/// rather than ignored: the disk budget (`max_disk_bytes`) measures the
/// embedded store's files; ClickHouse's disk is ClickHouse's to budget.
fn refuse_embedded_only_settings(config: &ServerConfig) -> Result<(), OpenError> {
    if config.max_disk_bytes.is_some() {
        return Err(OpenError::Config(
            "max_disk_bytes is the embedded store's disk budget and is not implemented for the \
             clickhouse backend; bound ClickHouse's disk with its own storage policies, and \
             retention_period / retention_stream"
                .into(),
        ));
    }
    Ok(())
}

/// The backend's counters, read at scrape time.
struct Counters(Arc<ClickHouseBackend>);

impl BackendMetrics for Counters {
    /// Writes the `runakefli_clickhouse_*` families.
    fn render(&self, x: &mut Exposition) {
        render_stats(x, &self.0.sql_stats());
        render_pushes(x, &self.0.push_stats());
        render_housekeeping(x, &self.0.housekeeping_stats());
    }
}

/// Writes the push families: batches (insert pairs) by outcome, the pushes
/// and rows in acknowledged ones (pushes per batch is their ratio), retries,
/// backlog refusals and the backlog now.
fn render_pushes(x: &mut Exposition, p: &PushStats) {
    x.family(
        "runakefli_clickhouse_insert_batches_total",
        "counter",
        "Batches of pushes written to ClickHouse as one streams and one logs insert, by outcome (a failed batch answered each of its pushes 503 or 500).",
    );
    x.sample("", &[("outcome", "ok")], p.batches as f64);
    x.sample("", &[("outcome", "failed")], p.failed_batches as f64);
    x.counter(
        "runakefli_clickhouse_batched_pushes_total",
        "Pushes in batches ClickHouse acknowledged; divided by the ok batches, pushes per insert.",
        p.batched_pushes as f64,
    );
    x.counter(
        "runakefli_clickhouse_batched_rows_total",
        "Log rows in batches ClickHouse acknowledged; divided by the ok batches, rows per insert.",
        p.batched_rows as f64,
    );
    x.counter(
        "runakefli_clickhouse_push_retries_total",
        "Inserts retried after a failure that may pass (no answer, HTTP 503, a retryable exception).",
        p.retries as f64,
    );
    x.counter(
        "runakefli_clickhouse_pushes_refused_total",
        "Pushes answered 503 at once because the backlog bound was reached (--clickhouse-max-waiting-pushes, --clickhouse-max-waiting-bytes); nothing of them was stored.",
        p.refused as f64,
    );
    x.gauge(
        "runakefli_clickhouse_push_backlog_pushes",
        "Pushes waiting for ClickHouse now (queued, or in the batch being written).",
        p.waiting_pushes as f64,
    );
    x.gauge(
        "runakefli_clickhouse_push_backlog_bytes",
        "Encoded bytes of the pushes waiting for ClickHouse now.",
        p.waiting_bytes as f64,
    );
}

/// Writes the retention and delete-processing families.
fn render_housekeeping(x: &mut Exposition, h: &HousekeepingStats) {
    x.family(
        "runakefli_clickhouse_retention_passes_total",
        "counter",
        "Retention passes over ClickHouse, by outcome (a failed pass is tried again next retention_interval).",
    );
    x.sample("", &[("outcome", "ok")], h.retention_passes as f64);
    x.sample("", &[("outcome", "failed")], h.retention_failures as f64);
    x.counter(
        "runakefli_clickhouse_retention_dropped_partitions_total",
        "Day partitions of logs retention dropped whole.",
        h.dropped_partitions as f64,
    );
    x.counter(
        "runakefli_clickhouse_retention_row_deletes_total",
        "Lightweight DELETE statements retention ran for streams with shorter periods.",
        h.row_deletes as f64,
    );
    x.counter(
        "runakefli_clickhouse_retention_expired_stream_days_total",
        "(stream, day) pairs retention expired.",
        h.expired_stream_days as f64,
    );
    x.counter(
        "runakefli_clickhouse_delete_requests_processed_total",
        "Delete requests purged from ClickHouse and marked processed.",
        h.deletes_processed as f64,
    );
    x.counter(
        "runakefli_clickhouse_delete_processing_failures_total",
        "Rounds of delete-request processing that failed (tried again at the next tick).",
        h.delete_failures as f64,
    );
}

/// Writes the families of one reading of the counters.
fn render_stats(x: &mut Exposition, s: &SqlStats) {
    x.counter(
        "runakefli_clickhouse_plans_answered_total",
        "Query plans ClickHouse answered in SQL.",
        s.plans_answered as f64,
    );
    x.counter(
        "runakefli_clickhouse_plans_declined_total",
        "Query plans the SQL cannot express exactly; the engine scanned and evaluated them.",
        s.plans_declined as f64,
    );
    x.counter(
        "runakefli_clickhouse_scans_total",
        "Scans ClickHouse served to the engine (declined plans and queries without a plan form).",
        s.scans as f64,
    );
    x.counter(
        "runakefli_clickhouse_stream_bounds_total",
        "Stream-bounds queries ClickHouse answered for /series (each stream's first and last time, aggregated in SQL).",
        s.bounds_queries as f64,
    );
    x.counter(
        "runakefli_clickhouse_stream_totals_total",
        "Stream-totals queries ClickHouse answered for index/stats and index/volume (each stream's entries summed in SQL).",
        s.totals_queries as f64,
    );
    x.family(
        "runakefli_clickhouse_rows_shipped_total",
        "counter",
        "Rows ClickHouse sent back, by path: answer rows of plans answered in SQL (plan), log rows of scans (scan), one row per stream of stream-bounds queries (bounds) and of stream-totals queries (totals), log rows of answered plans left to the engine (residual).",
    );
    x.sample("", &[("path", "plan")], s.plan_rows as f64);
    x.sample("", &[("path", "scan")], s.scan_rows as f64);
    x.sample("", &[("path", "bounds")], s.bounds_rows as f64);
    x.sample("", &[("path", "totals")], s.totals_rows as f64);
    x.sample("", &[("path", "residual")], s.residual_rows as f64);
    x.counter(
        "runakefli_clickhouse_lines_legs_total",
        "Legs (slices of whole days) log queries answered in SQL read, newest first backward; reading stops once the limit is held.",
        s.lines_legs as f64,
    );
    x.counter(
        "runakefli_clickhouse_lines_pages_total",
        "SQL reads of log queries answered in SQL: one per keyset page of a leg.",
        s.lines_pages as f64,
    );
    x.counter(
        "runakefli_clickhouse_metric_legs_total",
        "SQL reads of metric queries answered in SQL: one per leg (runs of whole days of the steps, read at once) of a query over two days or more, one for a query read whole.",
        s.metric_legs as f64,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clickhouse_config() -> ServerConfig {
        ServerConfig {
            backend: crate::config::BackendConfig::ClickHouse(Box::new(ClickHouseSettings::new(
                Config::new("http://127.0.0.1:1", "x"),
            ))),
            ..ServerConfig::default()
        }
    }

    #[test]
    fn clickhouse_refuses_the_disk_budget_before_connecting() {
        let mut c = clickhouse_config();
        c.max_disk_bytes = Some(1 << 30);
        match crate::backends::open(&c) {
            Err(OpenError::Config(m)) => assert!(m.contains("max_disk_bytes"), "{m}"),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("opened"),
        }
    }

    #[test]
    fn an_unreachable_clickhouse_fails_the_start() {
        match crate::backends::open(&clickhouse_config()) {
            Err(OpenError::Backend(e)) => {
                let m = e.to_string();
                assert!(m.starts_with("clickhouse backend: "), "{m}");
                assert!(m.contains("unreachable"), "{m}");
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("opened"),
        }
    }

    #[test]
    fn housekeeping_counters_are_exposed() {
        let mut x = Exposition::default();
        let h = HousekeepingStats {
            retention_passes: 4,
            retention_failures: 1,
            dropped_partitions: 2,
            row_deletes: 3,
            expired_stream_days: 12,
            deletes_processed: 5,
            delete_failures: 6,
        };
        render_housekeeping(&mut x, &h);
        let text = x.finish();
        for line in [
            r#"runakefli_clickhouse_retention_passes_total{outcome="ok"} 4"#,
            r#"runakefli_clickhouse_retention_passes_total{outcome="failed"} 1"#,
            "runakefli_clickhouse_retention_dropped_partitions_total 2",
            "runakefli_clickhouse_retention_row_deletes_total 3",
            "runakefli_clickhouse_retention_expired_stream_days_total 12",
            "runakefli_clickhouse_delete_requests_processed_total 5",
            "runakefli_clickhouse_delete_processing_failures_total 6",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
    }

    #[test]
    fn push_counters_are_exposed() {
        let mut x = Exposition::default();
        let p = PushStats {
            retries: 2,
            batches: 10,
            failed_batches: 1,
            batched_pushes: 40,
            batched_rows: 4_000,
            refused: 3,
            waiting_pushes: 5,
            waiting_bytes: 1_234,
        };
        render_pushes(&mut x, &p);
        let text = x.finish();
        for line in [
            r#"runakefli_clickhouse_insert_batches_total{outcome="ok"} 10"#,
            r#"runakefli_clickhouse_insert_batches_total{outcome="failed"} 1"#,
            "runakefli_clickhouse_batched_pushes_total 40",
            "runakefli_clickhouse_batched_rows_total 4000",
            "runakefli_clickhouse_push_retries_total 2",
            "runakefli_clickhouse_pushes_refused_total 3",
            "runakefli_clickhouse_push_backlog_pushes 5",
            "runakefli_clickhouse_push_backlog_bytes 1234",
            "# TYPE runakefli_clickhouse_push_backlog_pushes gauge",
            "# TYPE runakefli_clickhouse_push_retries_total counter",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
    }

    #[test]
    fn sql_counters_are_exposed_as_counters() {
        let mut x = Exposition::default();
        let stats = SqlStats {
            plans_answered: 3,
            plans_declined: 2,
            plan_rows: 120,
            scans: 4,
            scan_rows: 5_000,
            bounds_queries: 1,
            bounds_rows: 7,
            residual_rows: 9,
            totals_queries: 2,
            totals_rows: 11,
            lines_legs: 6,
            lines_pages: 8,
            metric_legs: 5,
        };
        render_stats(&mut x, &stats);
        let text = x.finish();
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            samples,
            [
                "runakefli_clickhouse_plans_answered_total 3",
                "runakefli_clickhouse_plans_declined_total 2",
                "runakefli_clickhouse_scans_total 4",
                "runakefli_clickhouse_stream_bounds_total 1",
                "runakefli_clickhouse_stream_totals_total 2",
                "runakefli_clickhouse_rows_shipped_total{path=\"plan\"} 120",
                "runakefli_clickhouse_rows_shipped_total{path=\"scan\"} 5000",
                "runakefli_clickhouse_rows_shipped_total{path=\"bounds\"} 7",
                "runakefli_clickhouse_rows_shipped_total{path=\"totals\"} 11",
                "runakefli_clickhouse_rows_shipped_total{path=\"residual\"} 9",
                "runakefli_clickhouse_lines_legs_total 6",
                "runakefli_clickhouse_lines_pages_total 8",
                "runakefli_clickhouse_metric_legs_total 5",
            ]
        );
        for family in [
            "runakefli_clickhouse_plans_answered_total",
            "runakefli_clickhouse_plans_declined_total",
            "runakefli_clickhouse_scans_total",
            "runakefli_clickhouse_stream_bounds_total",
            "runakefli_clickhouse_stream_totals_total",
            "runakefli_clickhouse_rows_shipped_total",
            "runakefli_clickhouse_lines_legs_total",
            "runakefli_clickhouse_lines_pages_total",
            "runakefli_clickhouse_metric_legs_total",
        ] {
            assert!(
                text.contains(&format!("# TYPE {family} counter\n")),
                "{family}: {text}"
            );
        }
    }
}
