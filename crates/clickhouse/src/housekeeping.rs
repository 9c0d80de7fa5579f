//! The backend's background thread: retention every `retention_interval`
//! ([`crate::retention`]), due delete requests purged every
//! [`TICK`] ([`crate::deletes`]), and delete requests re-read from
//! ClickHouse every [`crate::deletes::RELOAD_EVERY`].

use crate::clock::now_ns;
use crate::deletes::RELOAD_EVERY;
use crate::retention::RetentionReport;
use crate::stats::HousekeepingCounters;
use crate::Error;
use runakefli_model::retention::RetentionConfig;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// How often the thread wakes.
pub const TICK: Duration = Duration::from_millis(500);

/// What the housekeeping thread applies (the server's settings).
#[derive(Clone, Debug)]
pub struct Housekeeping {
    /// `retention_period`, `retention_stream`, per-tenant overrides and
    /// `retention_interval` (its disk budget is refused by the server: it
    /// is the embedded store's).
    pub retention: RetentionConfig,
    /// `delete_request_cancel_period`: a request is purged, and can no longer
    /// be cancelled, this long after it was accepted.
    pub delete_cancel_period: Duration,
}

impl Default for Housekeeping {
    /// Nothing expires; delete requests are due after 24 h (Loki's default).
    fn default() -> Self {
        Housekeeping {
            retention: RetentionConfig::default(),
            delete_cancel_period: Duration::from_secs(24 * 3600),
        }
    }
}

/// When each job last ran.
struct Clock {
    retention: Option<Instant>,
    reload: Instant,
}

/// What the housekeeping thread runs each turn, and where it counts what
/// they did: the backend ([`crate::ClickHouseBackend`]).
pub(crate) trait Jobs: Send + Sync + 'static {
    /// The settings applied.
    fn settings(&self) -> &Housekeeping;
    /// Where the outcomes are counted.
    fn counters(&self) -> &HousekeepingCounters;
    /// Re-reads the delete requests.
    fn reload_deletes(&self) -> Result<(), Error>;
    /// Runs one retention pass at `now`.
    fn apply_retention(&self, now: i64) -> Result<RetentionReport, Error>;
    /// Purges the delete requests due at `now`; how many were.
    fn process_due_deletes(&self, now: i64) -> Result<usize, Error>;
}

/// Starts the housekeeping thread over `jobs`. It holds them weakly and
/// ends within a [`TICK`] once they are dropped. Failures are logged and
/// the job is tried again on its next turn.
pub(crate) fn spawn<J: Jobs>(jobs: &Arc<J>) -> std::io::Result<std::thread::JoinHandle<()>> {
    let weak: Weak<J> = Arc::downgrade(jobs);
    std::thread::Builder::new()
        .name("clickhouse-housekeeping".into())
        .spawn(move || {
            let mut clock = Clock {
                retention: None,
                reload: Instant::now(),
            };
            loop {
                std::thread::sleep(TICK);
                let Some(jobs) = weak.upgrade() else {
                    return;
                };
                round(&*jobs, &mut clock);
            }
        })
}

/// One turn: each job that is due.
fn round<J: Jobs>(jobs: &J, clock: &mut Clock) {
    if clock.reload.elapsed() >= RELOAD_EVERY {
        clock.reload = Instant::now();
        if let Err(e) = jobs.reload_deletes() {
            tracing::error!(error = %e, "re-reading delete requests from clickhouse failed");
        }
    }
    let retention = &jobs.settings().retention;
    let due = retention.shortest_period().is_some()
        && clock
            .retention
            .is_none_or(|l| l.elapsed() >= retention.interval);
    let counters = jobs.counters();
    let add = |c: &AtomicU64, n: u64| c.fetch_add(n, Ordering::Relaxed);
    if due {
        clock.retention = Some(Instant::now());
        match jobs.apply_retention(now_ns()) {
            Ok(r) => {
                add(&counters.retention_passes, 1);
                add(&counters.dropped_partitions, r.dropped_partitions);
                add(&counters.row_deletes, r.row_deletes);
                add(&counters.expired_stream_days, r.expired_stream_days);
            }
            Err(e) => {
                add(&counters.retention_failures, 1);
                tracing::error!(error = %e, "clickhouse retention pass failed");
            }
        }
    }
    match jobs.process_due_deletes(now_ns()) {
        Ok(0) => {}
        Ok(n) => {
            add(&counters.deletes_processed, n as u64);
            tracing::info!(requests = n, "delete requests processed in clickhouse");
        }
        Err(e) => {
            add(&counters.delete_failures, 1);
            tracing::error!(error = %e, "processing delete requests failed");
        }
    }
}
