//! What the query benchmark ([`crate::query_bench`]) pushes and queries: its
//! configuration, apart from the benchmark so the report
//! ([`crate::query_report`]) can carry it without depending on the run.

use std::path::PathBuf;

use serde::Serialize;

use crate::data_marker::DataMarker;
use crate::generator::Shape;
use crate::query_set::QuerySet;

/// What to push and query.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QueryBenchConfig {
    /// Base URL of the server (of an external one; a
    /// [`ServerProcess`](crate::own_server::ServerProcess) has its own).
    pub url: String,
    /// Which queries to time.
    pub set: QuerySet,
    /// Lines to push before querying.
    pub lines: u64,
    /// Streams (pods).
    pub streams: usize,
    /// Generator seed.
    pub seed: u64,
    /// Workload shape of the pushed lines.
    pub shape: Shape,
    /// Covered time span, seconds (the queries cover the last hour of it).
    pub span_secs: u64,
    /// End of the covered span, nanoseconds since the epoch; `None` means now.
    pub end_ns: Option<i64>,
    /// Push the workload first; when false, the data must already be there and
    /// `end_ns` should name the end of its span.
    pub push: bool,
    /// After a complete push, write a [`DataMarker`] into this data directory so a
    /// later run can reuse the data.
    pub marker_dir: Option<PathBuf>,
    /// Concurrent push connections.
    pub concurrency: usize,
    /// Lines per push request.
    pub batch_lines: usize,
    /// Upper bound on the wait for merges to settle after the push, seconds.
    pub settle_timeout_secs: u64,
    /// Range query step, seconds.
    pub step_secs: u64,
    /// Warm runs per query (the median is reported).
    pub warm_runs: usize,
    /// Cold runs per query, each after its own restart when the benchmark
    /// restarts the server (the median is reported; at least 1).
    pub cold_runs: usize,
    /// `limit` of log queries.
    pub limit: u32,
    /// Per-request timeout, seconds.
    pub timeout_secs: u64,
    /// Tenant sent as `X-Scope-OrgID`, if any.
    pub tenant: Option<String>,
    /// Restart the server (and try to drop the page cache) before each query's cold
    /// run, when the benchmark controls the server.
    pub cold_restart: bool,
    /// With `cold_restart`, also drop the page cache between stopping and starting
    /// the server (needs root; affects the whole machine).
    pub drop_page_cache: bool,
    /// PID of an external server, for its peak RSS.
    pub pid: Option<u32>,
    /// VictoriaLogs to time beside us in the same run (needle queries).
    pub victorialogs: Option<VictoriaLogsTarget>,
}

/// A VictoriaLogs binary the user built, and where it keeps its data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VictoriaLogsTarget {
    /// The `victoria-logs` executable.
    pub binary: PathBuf,
    /// Its `-storageDataPath`; marked like ours after a complete push, so a
    /// later run with the same workload queries it without pushing.
    pub data_dir: PathBuf,
}

impl Default for QueryBenchConfig {
    fn default() -> Self {
        QueryBenchConfig {
            url: "http://127.0.0.1:3100".into(),
            set: QuerySet::Workload,
            lines: 1_000_000,
            streams: 5_000,
            seed: 1,
            shape: Shape::Reference,
            span_secs: 3_600,
            end_ns: None,
            push: true,
            marker_dir: None,
            concurrency: 4,
            batch_lines: 1_000,
            settle_timeout_secs: 600,
            step_secs: 60,
            warm_runs: 5,
            cold_runs: 1,
            limit: 100,
            timeout_secs: 300,
            tenant: None,
            cold_restart: true,
            drop_page_cache: true,
            pid: None,
            victorialogs: None,
        }
    }
}

impl QueryBenchConfig {
    /// The marker describing this config's push ending at `end_ns`.
    pub fn marker(&self, end_ns: i64) -> DataMarker {
        DataMarker {
            lines: self.lines,
            streams: self.streams,
            seed: self.seed,
            span_secs: self.span_secs,
            end_ns,
            shape: self.shape,
        }
    }
}
