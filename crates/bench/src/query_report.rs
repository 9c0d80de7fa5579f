//! What the query benchmark measured, and its markdown form.

use serde::Serialize;

use crate::ingest_bench::IngestReport;
use crate::machine::MachineInfo;
use crate::needles::Needles;
use crate::needles_varied::NeedleSet;
use crate::query_config::QueryBenchConfig;
use crate::query_set::{QueryMode, QuerySpec};
use crate::victorialogs::VictoriaLogsRun;

/// The size of a query result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ResultSize {
    /// `resultType` of the answer.
    pub result_type: String,
    /// Series (or streams) in the answer.
    pub series: u64,
    /// Entries (log queries) or samples (metric queries) over all series.
    pub values: u64,
}

/// Parses the size of a Loki query answer.
pub fn result_size(body: &str) -> Result<ResultSize, String> {
    let v: serde_json::Value =
        serde_json::from_str(body).map_err(|e| format!("answer is not JSON: {e}"))?;
    let data = v.get("data").ok_or("answer has no data")?;
    let result_type = data
        .get("resultType")
        .and_then(|t| t.as_str())
        .unwrap_or("")
        .to_string();
    let result = data.get("result").ok_or("answer has no result")?;
    let (series, values) = match result_type.as_str() {
        "scalar" => (1, 1),
        "vector" => {
            let n = result.as_array().map_or(0, |a| a.len()) as u64;
            (n, n)
        }
        _ => {
            let arr = result.as_array().ok_or("result is not an array")?;
            let values = arr
                .iter()
                .map(|s| {
                    s.get("values")
                        .and_then(|v| v.as_array())
                        .map_or(0, |a| a.len()) as u64
                })
                .sum();
            (arr.len() as u64, values)
        }
    };
    Ok(ResultSize {
        result_type,
        series,
        values,
    })
}

/// How a query fared.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum QueryOutcome {
    /// Answered.
    Answered {
        /// First run, milliseconds.
        cold_ms: f64,
        /// Median of the warm runs, milliseconds.
        warm_median_ms: f64,
        /// Every warm run, milliseconds.
        warm_ms: Vec<f64>,
        /// Size of the (first) answer.
        size: ResultSize,
    },
    /// The server rejected the query (e.g. not implemented yet).
    Unsupported {
        /// HTTP status.
        status: u16,
        /// The server's message.
        message: String,
    },
    /// Transport failure or unreadable answer.
    Failed {
        /// What went wrong.
        error: String,
    },
}

/// One row of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueryTiming {
    /// The query.
    pub query: QuerySpec,
    /// Range or instant.
    pub mode: QueryMode,
    /// What happened.
    pub outcome: QueryOutcome,
    /// True when the server was restarted just before the cold run.
    pub restarted: bool,
    /// Peak RSS (`VmHWM`) of the server process after this query's runs, bytes.
    pub peak_rss_bytes: Option<u64>,
    /// Highest anonymous resident memory (`RssAnon`) of the server seen while
    /// this query's runs went on, bytes.
    pub peak_anon_bytes: Option<u64>,
    /// Warm median divided by the query's target, when it has one and was answered.
    pub warm_to_target: Option<f64>,
    /// VictoriaLogs' runs of the query's LogsQL twin in this run, or why
    /// they failed (needle queries with `--victorialogs-bin`).
    pub victorialogs: Option<Result<VictoriaLogsRun, String>>,
}

impl QueryTiming {
    /// Builds a row, computing the ratio to the target.
    pub fn new(
        query: QuerySpec,
        mode: QueryMode,
        outcome: QueryOutcome,
        restarted: bool,
        peak_rss_bytes: Option<u64>,
        peak_anon_bytes: Option<u64>,
    ) -> QueryTiming {
        let warm_to_target = match (&outcome, query.target_ms) {
            (QueryOutcome::Answered { warm_median_ms, .. }, Some(t)) if t > 0.0 => {
                Some(warm_median_ms / t)
            }
            _ => None,
        };
        QueryTiming {
            query,
            mode,
            outcome,
            restarted,
            peak_rss_bytes,
            peak_anon_bytes,
            warm_to_target,
            victorialogs: None,
        }
    }
}

/// How cold runs were made cold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ColdRuns {
    /// The server was restarted before each query's first run.
    pub restarted: bool,
    /// The page cache was dropped before each restart.
    pub page_cache_dropped: bool,
    /// Why the page cache was not dropped, when it was tried and failed.
    pub page_cache_note: Option<String>,
}

/// Where the queried data came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DataSource {
    /// Pushed by this run; `marker` tells whether the data directory was marked reusable.
    Pushed {
        /// `Ok(path)` of the marker written, or why none was.
        marker: Option<Result<String, String>>,
    },
    /// Reused from a data directory holding the same push (see `data_marker`).
    Reused {
        /// The data directory.
        dir: String,
    },
    /// Already stored on an external server.
    External,
}

/// Everything the query benchmark measured.
#[derive(Clone, Debug, Serialize)]
pub struct QueryReport {
    /// The benchmark config.
    pub config: QueryBenchConfig,
    /// The machine.
    pub machine: MachineInfo,
    /// The command line that ran the benchmark.
    pub command_line: String,
    /// APP of the queries.
    pub app: String,
    /// WORD of the queries.
    pub word: String,
    /// The needles of the issue-7 set.
    pub needles: Option<Needles>,
    /// The needles of the needles set.
    pub needle_set: Option<NeedleSet>,
    /// Seconds spent regenerating the data to pick the needles.
    pub needle_seconds: Option<f64>,
    /// Start of the queried range, ns.
    pub start_ns: i64,
    /// End of the queried range (and instant query time), ns.
    pub end_ns: i64,
    /// Where the data came from.
    pub data: DataSource,
    /// The push phase, when the benchmark pushed.
    pub ingest: Option<IngestReport>,
    /// How cold runs were made cold.
    pub cold: ColdRuns,
    /// Highest `VmHWM` of the server over the query phase, bytes (see `peak_rss_note`).
    pub peak_rss_bytes: Option<u64>,
    /// What `peak_rss_bytes` covers.
    pub peak_rss_note: String,
    /// Highest `RssAnon` of the server sampled while queries ran, bytes.
    pub peak_anon_bytes: Option<u64>,
    /// One row per query and mode.
    pub queries: Vec<QueryTiming>,
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

/// Markdown cell text: pipes escaped, newlines flattened.
pub(crate) fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Rounds milliseconds for the table: one decimal below 100, none above.
pub(crate) fn ms(v: f64) -> String {
    if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

impl QueryTiming {
    /// The "returned" cell: lines of a log query, series of a metric query.
    fn returned(&self, size: &ResultSize) -> String {
        let mut s = if self.query.is_log_query {
            let plural = if size.values == 1 { "" } else { "s" };
            format!("{} line{plural}", size.values)
        } else {
            format!("{} series", size.series)
        };
        if let Some(e) = self.query.expected_lines {
            if e == size.values {
                s.push_str(&format!(" (expected {e}: ok)"));
            } else {
                s.push_str(&format!(" (**expected {e}: MISMATCH**)"));
            }
        }
        s
    }

    /// For a query with expected lines: whether it returned exactly them (a query
    /// that was not answered did not).
    pub fn returned_expected(&self) -> Option<bool> {
        let e = self.query.expected_lines?;
        Some(matches!(&self.outcome, QueryOutcome::Answered { size, .. } if size.values == e))
    }
}

impl QueryReport {
    /// The VictoriaLogs side of the run, when there was one: per query its
    /// LogsQL, answer size, cold and warm times, and our warm time over its.
    fn fmt_victorialogs(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.queries.iter().all(|q| q.victorialogs.is_none()) {
            return Ok(());
        }
        writeln!(f)?;
        writeln!(
            f,
            "VictoriaLogs in the same run (each query right after ours; `VictoriaLogs ms` above is its warm median, the target half of it):"
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "| # | LogsQL | returned | cold ms | warm ms | ours warm / its warm | ours cold / ours warm |"
        )?;
        writeln!(f, "|---|---|---|---|---|---|---|")?;
        for q in &self.queries {
            let Some(run) = &q.victorialogs else {
                continue;
            };
            let ours = match &q.outcome {
                QueryOutcome::Answered {
                    cold_ms,
                    warm_median_ms,
                    ..
                } => Some((*cold_ms, *warm_median_ms)),
                _ => None,
            };
            match run {
                Ok(r) => {
                    let returned = match r.total {
                        Some(t) => format!("{} series, {t} in all", r.returned),
                        None => format!("{} lines", r.returned),
                    };
                    let ratio = |v: Option<f64>| v.map_or("-".to_string(), |r| format!("{r:.2}"));
                    writeln!(
                        f,
                        "| {} | `` {} `` | {returned} | {} | {} | {} | {} |",
                        q.query.id,
                        cell(&r.query.text),
                        ms(r.cold_ms),
                        ms(r.warm_median_ms),
                        ratio(ours.map(|(_, w)| w / r.warm_median_ms)),
                        ratio(ours.map(|(c, w)| c / w)),
                    )?;
                }
                Err(e) => writeln!(
                    f,
                    "| {} | - | failed: {} | - | - | - | - |",
                    q.query.id,
                    cell(e)
                )?,
            }
        }
        Ok(())
    }
}

impl std::fmt::Display for QueryReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.config;
        writeln!(f, "## Query benchmark: set {}", c.set.name())?;
        writeln!(f)?;
        writeln!(f, "- machine: {}", self.machine)?;
        writeln!(f, "- command: `{}`", self.command_line)?;
        let source = match &self.data {
            DataSource::Pushed { .. } => "pushed and flushed first".to_string(),
            DataSource::Reused { dir } => format!("reused from {dir} (pushed by an earlier run)"),
            DataSource::External => "already stored".to_string(),
        };
        writeln!(
            f,
            "- data: {} lines over {} streams (seed {}, shape {}), {source}; span ends at {} ns; APP = {}, WORD = {}",
            c.lines, c.streams, c.seed, c.shape.name(), self.end_ns, self.app, self.word
        )?;
        if let Some(n) = &self.needles {
            writeln!(
                f,
                "- needles: user id {} (in {} generated lines), trace id {} (in {} generated line{}), picked from the {} lines of the hour in {:.1} s",
                n.user_id,
                n.user_id_lines,
                n.trace_id,
                n.trace_id_lines,
                if n.trace_id_lines == 1 { "" } else { "s" },
                n.lines_scanned,
                self.needle_seconds.unwrap_or(0.0)
            )?;
        }
        if let Some(n) = &self.needle_set {
            let picks: Vec<String> = n
                .needles
                .iter()
                .map(|x| format!("{} {} ({})", x.kind.describe(), x.value, x.lines))
                .collect();
            let mut counts = vec![&n.phrase2];
            counts.extend(&n.phrase3);
            counts.extend([&n.common_word, &n.error_word]);
            let counts: Vec<String> = counts
                .iter()
                .map(|w| format!("\"{}\" {}", w.text, w.lines))
                .collect();
            writeln!(
                f,
                "- needles (lines of the hour holding each): {}; lines holding {}; picked from the {} lines of the hour in {:.1} s",
                picks.join(", "),
                counts.join(", "),
                n.lines_scanned,
                self.needle_seconds.unwrap_or(0.0)
            )?;
        }
        let cold = if self.cold.restarted {
            let cache = if self.cold.page_cache_dropped {
                "page cache dropped".to_string()
            } else {
                format!(
                    "page cache not dropped: {}",
                    self.cold.page_cache_note.as_deref().unwrap_or("not tried")
                )
            };
            match c.cold_runs {
                0 | 1 => format!("first run after a server restart ({cache})"),
                n => {
                    format!("median of {n} first runs, each after its own server restart ({cache})")
                }
            }
        } else {
            "first run (server not restarted, page cache not dropped)".to_string()
        };
        writeln!(
            f,
            "- range queries: step {} s over the hour (log queries: limit {}, backward){}; cold = {cold}; warm = median of {} runs after it",
            c.step_secs,
            c.limit,
            if c.set.modes().contains(&QueryMode::Instant) {
                "; instant queries at its end"
            } else {
                ""
            },
            c.warm_runs
        )?;
        if let Some(i) = &self.ingest {
            writeln!(
                f,
                "- push: {:.0} lines/s, {} failed requests",
                i.lines_per_second, i.failed_requests
            )?;
        }
        if let DataSource::Pushed {
            marker: Some(marker),
        } = &self.data
        {
            match marker {
                Ok(p) => writeln!(f, "- data directory marked reusable: {p}")?,
                Err(e) => writeln!(f, "- data directory not marked reusable: {e}")?,
            }
        }
        match self.peak_rss_bytes {
            Some(b) => writeln!(
                f,
                "- server peak RSS (VmHWM): {:.1} MiB, {}",
                mib(b),
                self.peak_rss_note
            )?,
            None => writeln!(f, "- server peak RSS: unavailable ({})", self.peak_rss_note)?,
        }
        if let Some(b) = self.peak_anon_bytes {
            writeln!(
                f,
                "- server peak anonymous memory (RssAnon, sampled every 10 ms while queries ran): {:.1} MiB; the rest of VmHWM is file pages of the memory-mapped parts (page cache the kernel can reclaim)",
                mib(b)
            )?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "| # | query | mode | returned | cold ms | warm ms | VictoriaLogs ms | target ms | warm/target |"
        )?;
        writeln!(f, "|---|---|---|---|---|---|---|---|---|")?;
        for q in &self.queries {
            let (returned, cold, warm) = match &q.outcome {
                QueryOutcome::Answered {
                    cold_ms,
                    warm_median_ms,
                    size,
                    ..
                } => (q.returned(size), ms(*cold_ms), ms(*warm_median_ms)),
                QueryOutcome::Unsupported { status, message } => (
                    format!("unsupported (status {status}: {})", cell(message)),
                    "-".into(),
                    "-".into(),
                ),
                QueryOutcome::Failed { error } => {
                    (format!("failed: {}", cell(error)), "-".into(), "-".into())
                }
            };
            let opt = |v: Option<f64>| v.map_or("-".to_string(), ms);
            writeln!(
                f,
                "| {} | `` {} `` | {} | {returned} | {cold} | {warm} | {} | {} | {} |",
                q.query.id,
                cell(&q.query.logql),
                q.mode.name(),
                opt(q.query.victorialogs_ms),
                opt(q.query.target_ms),
                q.warm_to_target
                    .map_or("-".to_string(), |r| format!("{r:.2}"))
            )?;
        }
        self.fmt_victorialogs(f)?;
        let checks: Vec<bool> = self
            .queries
            .iter()
            .filter_map(QueryTiming::returned_expected)
            .collect();
        if !checks.is_empty() {
            let ok = checks.iter().filter(|&&c| c).count();
            writeln!(f)?;
            writeln!(
                f,
                "Expected lines: {ok} of {} queries with an expected line count returned exactly that many{}",
                checks.len(),
                if ok == checks.len() { "." } else { " (see MISMATCH above)." }
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_of_each_result_type() {
        let streams = r#"{"status":"success","data":{"resultType":"streams","result":[{"stream":{},"values":[["1","a"],["2","b"]]},{"stream":{},"values":[["3","c"]]}]}}"#;
        assert_eq!(
            result_size(streams).unwrap(),
            ResultSize {
                result_type: "streams".into(),
                series: 2,
                values: 3
            }
        );
        let vector = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"2"]}]}}"#;
        assert_eq!(result_size(vector).unwrap().series, 1);
        let matrix = r#"{"data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"2"],[2,"3"]]}]}}"#;
        assert_eq!(result_size(matrix).unwrap().values, 2);
        assert!(result_size("nope").is_err());
        assert!(result_size("{}").is_err());
    }

    #[test]
    fn ratio_to_target_only_for_answered_queries_with_a_target() {
        let spec = QuerySpec {
            id: 1,
            name: "x",
            logql: "{a=\"b\"}".into(),
            is_log_query: true,
            victorialogs_ms: Some(20.0),
            target_ms: Some(10.0),
            expected_lines: Some(1),
            logsql: None,
        };
        let answered = QueryOutcome::Answered {
            cold_ms: 50.0,
            warm_median_ms: 25.0,
            warm_ms: vec![25.0],
            size: ResultSize {
                result_type: "streams".into(),
                series: 1,
                values: 1,
            },
        };
        let row = QueryTiming::new(spec.clone(), QueryMode::Range, answered, true, None, None);
        assert_eq!(row.warm_to_target, Some(2.5));
        let failed = QueryOutcome::Failed { error: "x".into() };
        let row2 = QueryTiming::new(spec, QueryMode::Range, failed, true, None, None);
        assert_eq!(row2.warm_to_target, None);
    }
}
