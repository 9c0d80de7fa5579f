//! The query benchmark: pushes the reference workload (one hour), flushes, then times
//! the seven reference LogQL queries as range queries (step 60 s, as Grafana would)
//! and as instant queries at the end of the hour, cold (first run) and warm (median).
//! A query the server rejects is reported as unsupported, never fatal.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::generator::Generator;
use crate::http;
use crate::ingest_bench::{run_ingest_bench, IngestBenchConfig, IngestReport};
use crate::machine::{command_line, MachineInfo};
use crate::vocab::{COMMON_WORD, PHRASE};

/// What to push and query.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QueryBenchConfig {
    /// Base URL of the server.
    pub url: String,
    /// Lines to push before querying.
    pub lines: u64,
    /// Streams (pods).
    pub streams: usize,
    /// Generator seed.
    pub seed: u64,
    /// Covered time span, seconds (the queries cover the last hour of it).
    pub span_secs: u64,
    /// End of the covered span, nanoseconds since the epoch; `None` means now.
    pub end_ns: Option<i64>,
    /// Push the workload first; when false, the data must already be there and
    /// `end_ns` should name the end of its span.
    pub push: bool,
    /// Concurrent push connections.
    pub concurrency: usize,
    /// Lines per push request.
    pub batch_lines: usize,
    /// Range query step, seconds.
    pub step_secs: u64,
    /// Warm runs per query (the median is reported).
    pub warm_runs: usize,
    /// `limit` of log queries.
    pub limit: u32,
    /// Per-request timeout, seconds.
    pub timeout_secs: u64,
    /// Tenant sent as `X-Scope-OrgID`, if any.
    pub tenant: Option<String>,
}

impl Default for QueryBenchConfig {
    fn default() -> Self {
        QueryBenchConfig {
            url: "http://127.0.0.1:3100".into(),
            lines: 1_000_000,
            streams: 5_000,
            seed: 1,
            span_secs: 3_600,
            end_ns: None,
            push: true,
            concurrency: 4,
            batch_lines: 1_000,
            step_secs: 60,
            warm_runs: 5,
            limit: 100,
            timeout_secs: 300,
            tenant: None,
        }
    }
}

/// One reference query.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QuerySpec {
    /// Number in workload.md (1..=7).
    pub id: u8,
    /// Short description.
    pub name: &'static str,
    /// The LogQL text.
    pub logql: String,
    /// True for log queries (limit and direction apply).
    pub is_log_query: bool,
}

/// The seven reference queries of workload.md for an app name and a common word.
pub fn reference_queries(app: &str, word: &str) -> Vec<QuerySpec> {
    let q = |id, name, logql: String, is_log_query| QuerySpec {
        id,
        name,
        logql,
        is_log_query,
    };
    vec![
        q(
            1,
            "errors of one app",
            format!(r#"sum(count_over_time({{app="{app}"}} | json | level="error" [1h]))"#),
            false,
        ),
        q(
            2,
            "errors per app",
            r#"sum by (app) (count_over_time({app=~".+"} | json | level="error" [1h]))"#.into(),
            false,
        ),
        q(
            3,
            "newest 100 lines with word",
            format!(r#"{{app=~".+"}} |= "{word}""#),
            true,
        ),
        q(
            4,
            "p99 duration per app",
            r#"quantile_over_time(0.99, {app=~".+"} | json | unwrap duration_ms [1h]) by (app)"#
                .into(),
            false,
        ),
        q(
            5,
            "top 10 paths",
            r#"topk(10, sum by (path) (count_over_time({app=~".+"} | json [1h])))"#.into(),
            false,
        ),
        q(
            6,
            "count lines with word",
            format!(r#"sum(count_over_time({{app=~".+"}} |= "{word}" [1h]))"#),
            false,
        ),
        q(
            7,
            "count lines with phrase",
            format!(r#"sum(count_over_time({{app=~".+"}} |= "{PHRASE}" [1h]))"#),
            false,
        ),
    ]
}

/// Range or instant query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum QueryMode {
    /// `/loki/api/v1/query_range` over the hour.
    Range,
    /// `/loki/api/v1/query` at the end of the hour.
    Instant,
}

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
    /// APP of the queries (the app with the most streams).
    pub app: String,
    /// WORD of the queries.
    pub word: String,
    /// Start of the queried range, ns.
    pub start_ns: i64,
    /// End of the queried range (and instant query time), ns.
    pub end_ns: i64,
    /// The push phase, when the benchmark pushed.
    pub ingest: Option<IngestReport>,
    /// One row per query and mode.
    pub queries: Vec<QueryTiming>,
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// Runs one query once: elapsed milliseconds and the answer, or the outcome to report.
fn run_once(
    agent: &ureq::Agent,
    url: &str,
    headers: &[(&str, &str)],
    params: &[(&str, &str)],
) -> Result<(f64, String), QueryOutcome> {
    let t0 = Instant::now();
    let reply = http::get(agent, url, headers, params).map_err(|e| QueryOutcome::Failed {
        error: format!("{e:#}"),
    })?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    if !reply.ok() {
        let mut message = reply.body.trim().to_string();
        if message.len() > 200 {
            let mut cut = 200;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push('…');
        }
        return Err(QueryOutcome::Unsupported {
            status: reply.status,
            message,
        });
    }
    Ok((ms, reply.body))
}

fn time_query(
    config: &QueryBenchConfig,
    agent: &ureq::Agent,
    spec: &QuerySpec,
    mode: QueryMode,
    start_ns: i64,
    end_ns: i64,
) -> QueryOutcome {
    let base = config.url.trim_end_matches('/');
    let (start, end, step, limit) = (
        start_ns.to_string(),
        end_ns.to_string(),
        format!("{}s", config.step_secs),
        config.limit.to_string(),
    );
    let mut params: Vec<(&str, &str)> = vec![("query", spec.logql.as_str())];
    let url = match mode {
        QueryMode::Range => {
            params.extend([
                ("start", start.as_str()),
                ("end", end.as_str()),
                ("step", step.as_str()),
            ]);
            format!("{base}/loki/api/v1/query_range")
        }
        QueryMode::Instant => {
            params.push(("time", end.as_str()));
            format!("{base}/loki/api/v1/query")
        }
    };
    if spec.is_log_query {
        params.extend([("limit", limit.as_str()), ("direction", "backward")]);
    }
    let mut headers = Vec::new();
    if let Some(t) = config.tenant.as_deref() {
        headers.push(("X-Scope-OrgID", t));
    }
    let (cold_ms, body) = match run_once(agent, &url, &headers, &params) {
        Ok(r) => r,
        Err(outcome) => return outcome,
    };
    let size = match result_size(&body) {
        Ok(s) => s,
        Err(error) => return QueryOutcome::Failed { error },
    };
    let mut warm_ms = Vec::with_capacity(config.warm_runs);
    for _ in 0..config.warm_runs {
        match run_once(agent, &url, &headers, &params) {
            Ok((ms, _)) => warm_ms.push(ms),
            Err(outcome) => return outcome,
        }
    }
    let warm_median_ms = median(&mut warm_ms.clone());
    QueryOutcome::Answered {
        cold_ms,
        warm_median_ms,
        warm_ms,
        size,
    }
}

/// Pushes the workload (unless `push` is false), then times the reference queries.
pub fn run_query_bench(config: &QueryBenchConfig) -> anyhow::Result<QueryReport> {
    let ingest_config = IngestBenchConfig {
        url: config.url.clone(),
        concurrency: config.concurrency,
        batch_lines: config.batch_lines,
        lines: config.lines,
        streams: config.streams,
        seed: config.seed,
        span_secs: config.span_secs,
        end_ns: Some(config.end_ns.unwrap_or_else(crate::ingest_bench::now_ns)),
        pregenerate: false,
        tenant: config.tenant.clone(),
        ..IngestBenchConfig::default()
    };
    let gen_config = ingest_config.generator_config();
    let generator = Generator::new(gen_config.clone())?;
    let app = generator.busiest_app().to_string();
    let ingest = if config.push {
        Some(run_ingest_bench(&ingest_config)?)
    } else {
        None
    };
    if let Some(r) = &ingest {
        anyhow::ensure!(
            r.lines_pushed > 0,
            "no line was accepted: {}",
            r.first_error.as_deref().unwrap_or("unknown error")
        );
    }
    let end_ns = gen_config.start_ns + gen_config.span_ns;
    let start_ns = end_ns - 3_600 * 1_000_000_000;
    let agent = http::agent(Duration::from_secs(config.timeout_secs));
    let mut queries = Vec::new();
    for spec in reference_queries(&app, COMMON_WORD) {
        for mode in [QueryMode::Range, QueryMode::Instant] {
            let outcome = time_query(config, &agent, &spec, mode, start_ns, end_ns);
            queries.push(QueryTiming {
                query: spec.clone(),
                mode,
                outcome,
            });
        }
    }
    Ok(QueryReport {
        config: config.clone(),
        machine: MachineInfo::detect(),
        command_line: command_line(),
        app,
        word: COMMON_WORD.to_string(),
        start_ns,
        end_ns,
        ingest,
        queries,
    })
}

impl std::fmt::Display for QueryReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "## Query benchmark")?;
        writeln!(f)?;
        writeln!(f, "- machine: {}", self.machine)?;
        writeln!(f, "- command: `{}`", self.command_line)?;
        writeln!(
            f,
            "- data: {} lines over {} streams (seed {}){}; APP = {}, WORD = {}",
            self.config.lines,
            self.config.streams,
            self.config.seed,
            if self.config.push {
                ", pushed and flushed first"
            } else {
                ", already stored"
            },
            self.app,
            self.word
        )?;
        writeln!(f, "- range queries: step {} s over the hour; instant queries at its end; cold = first run (page cache not dropped), warm = median of {}", self.config.step_secs, self.config.warm_runs)?;
        if let Some(i) = &self.ingest {
            writeln!(
                f,
                "- push: {:.0} lines/s, {} failed requests",
                i.lines_per_second, i.failed_requests
            )?;
        }
        writeln!(f)?;
        writeln!(f, "| # | query | mode | cold | warm (median) | result |")?;
        writeln!(f, "|---|---|---|---|---|---|")?;
        for q in &self.queries {
            let mode = match q.mode {
                QueryMode::Range => "range",
                QueryMode::Instant => "instant",
            };
            let (cold, warm, result) = match &q.outcome {
                QueryOutcome::Answered {
                    cold_ms,
                    warm_median_ms,
                    size,
                    ..
                } => (
                    format!("{cold_ms:.1} ms"),
                    format!("{warm_median_ms:.1} ms"),
                    format!(
                        "{} {} series, {} values",
                        size.result_type, size.series, size.values
                    ),
                ),
                QueryOutcome::Unsupported { status, message } => (
                    "-".into(),
                    "-".into(),
                    format!(
                        "unsupported (status {status}: {})",
                        message.replace('|', "\\|")
                    ),
                ),
                QueryOutcome::Failed { error } => (
                    "-".into(),
                    "-".into(),
                    format!("failed: {}", error.replace('|', "\\|")),
                ),
            };
            writeln!(
                f,
                "| {} | {} | {mode} | {cold} | {warm} | {result} |",
                q.query.id, q.query.name
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::testserver;

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
    fn queries_use_real_vocabulary() {
        let gen = Generator::new(crate::GeneratorConfig::default()).unwrap();
        let qs = reference_queries(gen.busiest_app(), COMMON_WORD);
        assert_eq!(qs.len(), 7);
        assert!(qs[0]
            .logql
            .contains(&format!("app=\"{}\"", gen.busiest_app())));
        assert!(qs[2].is_log_query && qs[2].logql.contains(COMMON_WORD));
        assert!(qs[6].logql.contains("connection timeout"));
    }

    #[test]
    fn rejected_queries_are_reported_as_unsupported() {
        fn respond(line: &str) -> (u16, String) {
            if line.starts_with("GET /loki/api/v1/query") && line.contains("count_over_time") {
                (400, "metric queries are not supported yet".into())
            } else if line.starts_with("GET /loki/api/v1/query") {
                (200, r#"{"status":"success","data":{"resultType":"streams","result":[{"stream":{},"values":[["1","x"]]}]}}"#.into())
            } else if line.starts_with("GET /admin/storage/stats") {
                (200, r#"{"merges_running":0,"parts":1}"#.into())
            } else {
                (204, String::new())
            }
        }
        let (url, seen) = testserver::start(respond);
        let config = QueryBenchConfig {
            url,
            lines: 300,
            streams: 50,
            warm_runs: 2,
            ..QueryBenchConfig::default()
        };
        let report = run_query_bench(&config).unwrap();
        assert_eq!(report.queries.len(), 14);
        let q3 = &report.queries[4];
        assert_eq!(q3.query.id, 3);
        match &q3.outcome {
            QueryOutcome::Answered { warm_ms, size, .. } => {
                assert_eq!(warm_ms.len(), 2);
                assert_eq!(size.values, 1);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            report.queries[0].outcome,
            QueryOutcome::Unsupported { status: 400, .. }
        ));
        let text = report.to_string();
        assert!(text.contains("unsupported (status 400"));
        serde_json::to_string(&report).unwrap();
        let seen = seen.lock().unwrap();
        assert!(seen
            .iter()
            .any(|(l, _)| l.contains("query_range") && l.contains("step=60s")));
        assert!(seen.iter().any(|(l, _)| l.contains("direction=backward")));
    }
}
