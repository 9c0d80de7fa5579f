//! The side-by-side benchmark of issue 11 (`runakefli bench clickhouse`): the
//! same generated workload pushed into two servers, one on the embedded store
//! and one on ClickHouse (`serve --backend clickhouse`), then nine queries
//! ([`side_by_side_queries`]) timed on both. Per query it reports the median
//! of the warm runs on each, their ratio, whether the two answers are the
//! same (`data.result`, or `data` for labels and series), and how much of the
//! ClickHouse run happened in SQL: the deltas of the server's
//! `runakefli_clickhouse_*` counters on `/metrics` (plans answered in SQL,
//! plans declined, rows shipped) over the query's runs.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::http;
use crate::ingest_bench::{now_ns, run_ingest_bench, IngestBenchConfig, IngestReport};
use crate::machine::{command_line, MachineInfo};
use crate::query_report::{cell, ms, result_size, ResultSize};
use crate::stats::median;
use crate::vocab::{COMMON_WORD, PHRASE};
use crate::{Generator, Shape};

/// Which endpoint a query goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SideKind {
    /// A log query, `/loki/api/v1/query_range` with a limit, backward.
    Log,
    /// A metric query, `/loki/api/v1/query_range` with a step.
    Metric,
    /// `/loki/api/v1/labels` over the hour.
    Labels,
    /// `/loki/api/v1/series` over the hour, with a matcher.
    Series,
}

/// One query of the side-by-side set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SideQuery {
    /// Number within the set (1-based).
    pub id: u8,
    /// Short description.
    pub name: &'static str,
    /// The endpoint.
    pub kind: SideKind,
    /// The LogQL (log and metric queries) or the `match[]` selector
    /// (series); empty for labels.
    pub text: String,
}

/// The nine queries: log filter, parser filter, count_over_time, rate with a
/// regex, topk, unwrapped quantile, bytes_over_time, labels and series, for
/// the workload's busiest app `app`.
///
/// The workload's lines are JSON, and `| logfmt` on a JSON line yields no
/// field worth filtering on, so the "logfmt filter" of the benchmark page is
/// timed as the same shape over the parser the lines have: `| json` and a
/// label filter on the parsed field.
pub fn side_by_side_queries(app: &str) -> Vec<SideQuery> {
    let q = |id, name, kind, text: String| SideQuery {
        id,
        name,
        kind,
        text,
    };
    vec![
        q(
            1,
            "log filter",
            SideKind::Log,
            format!(r#"{{app="{app}"}} |= "{COMMON_WORD}""#),
        ),
        q(
            2,
            "parser filter (json; stands for logfmt)",
            SideKind::Log,
            format!(r#"{{app="{app}"}} | json | level="error""#),
        ),
        q(
            3,
            "count_over_time",
            SideKind::Metric,
            format!(r#"count_over_time({{app="{app}"}}[1m])"#),
        ),
        q(
            4,
            "rate regex",
            SideKind::Metric,
            r#"sum by (app) (rate({namespace=~"shop|orders"} |~ "time(out|d out)" [1m]))"#.into(),
        ),
        q(
            5,
            "topk",
            SideKind::Metric,
            r#"topk(5, sum by (app) (count_over_time({app=~".+"} [5m])))"#.into(),
        ),
        q(
            6,
            "unwrap quantile",
            SideKind::Metric,
            format!(
                r#"quantile_over_time(0.99, {{app="{app}"}} | json | unwrap duration_ms [5m]) by (app)"#
            ),
        ),
        q(
            7,
            "bytes_over_time",
            SideKind::Metric,
            format!(r#"bytes_over_time({{app="{app}"}} |= "{PHRASE}" [5m])"#),
        ),
        q(8, "labels", SideKind::Labels, String::new()),
        q(9, "series", SideKind::Series, format!(r#"{{app="{app}"}}"#)),
    ]
}

/// What to push and query.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SideBySideConfig {
    /// Lines to push into each server.
    pub lines: u64,
    /// Streams (pods).
    pub streams: usize,
    /// Generator seed.
    pub seed: u64,
    /// Workload shape of the pushed lines (the queries are written for the reference shape).
    pub shape: Shape,
    /// Covered time span, seconds (the queries cover the last hour of it).
    pub span_secs: u64,
    /// End of the covered span, nanoseconds since the epoch; `None` means now.
    pub end_ns: Option<i64>,
    /// Concurrent push connections.
    pub concurrency: usize,
    /// Lines per push request.
    pub batch_lines: usize,
    /// Range query step, seconds.
    pub step_secs: u64,
    /// Timed runs per query and server after the first (the median is reported).
    pub warm_runs: usize,
    /// `limit` of log queries.
    pub limit: u32,
    /// Per-request timeout, seconds.
    pub timeout_secs: u64,
    /// Upper bound on the wait for the embedded store's merges after the push, seconds.
    pub settle_timeout_secs: u64,
}

impl Default for SideBySideConfig {
    fn default() -> Self {
        SideBySideConfig {
            lines: 200_000,
            streams: 1_000,
            seed: 1,
            shape: Shape::Reference,
            span_secs: 3_600,
            end_ns: None,
            concurrency: 2,
            batch_lines: 1_000,
            step_secs: 60,
            warm_runs: 5,
            limit: 100,
            timeout_secs: 600,
            settle_timeout_secs: 600,
        }
    }
}

/// The two servers, by base URL.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Servers {
    /// The server on the embedded store.
    pub embedded: String,
    /// The server on ClickHouse (`serve --backend clickhouse`).
    pub clickhouse: String,
}

/// How one query fared on one server.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum SideOutcome {
    /// Answered every run.
    Answered {
        /// The first run (after the push; nothing of this query cached), milliseconds.
        first_ms: f64,
        /// Median of the warm runs, milliseconds.
        median_ms: f64,
        /// Every warm run, milliseconds.
        warm_ms: Vec<f64>,
        /// Size of the first answer.
        size: ResultSize,
    },
    /// An error status, a transport failure or an unreadable answer.
    Failed {
        /// HTTP status, when there was an answer.
        status: Option<u16>,
        /// What went wrong.
        message: String,
    },
}

impl SideOutcome {
    fn median_ms(&self) -> Option<f64> {
        match self {
            SideOutcome::Answered { median_ms, .. } => Some(*median_ms),
            SideOutcome::Failed { .. } => None,
        }
    }
}

/// Whether the two servers gave the same answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "answers", rename_all = "snake_case")]
pub enum AnswerMatch {
    /// Identical `data.result` (or `data`).
    Same,
    /// Different; where.
    Differ {
        /// The first difference found.
        detail: String,
    },
    /// Not compared: a server did not answer.
    NotCompared,
}

/// Deltas of the ClickHouse server's `runakefli_clickhouse_*` counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SqlCounters {
    /// Plans answered in SQL.
    pub plans_answered: f64,
    /// Plans declined (the engine scanned and evaluated them).
    pub plans_declined: f64,
    /// Scans ClickHouse served.
    pub scans: f64,
    /// Answer rows of plans answered in SQL.
    pub plan_rows: f64,
    /// Log rows shipped by scans.
    pub scan_rows: f64,
}

impl SqlCounters {
    /// Reads the counters from a `/metrics` page; `None` when the page has
    /// none of them (not a ClickHouse server).
    pub fn parse(page: &str) -> Option<SqlCounters> {
        let mut c = SqlCounters::default();
        let mut seen = false;
        for line in page.lines().filter(|l| !l.starts_with('#')) {
            let Some((name, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(v) = value.parse::<f64>() else {
                continue;
            };
            let slot = match name {
                "runakefli_clickhouse_plans_answered_total" => &mut c.plans_answered,
                "runakefli_clickhouse_plans_declined_total" => &mut c.plans_declined,
                "runakefli_clickhouse_scans_total" => &mut c.scans,
                "runakefli_clickhouse_rows_shipped_total{path=\"plan\"}" => &mut c.plan_rows,
                "runakefli_clickhouse_rows_shipped_total{path=\"scan\"}" => &mut c.scan_rows,
                _ => continue,
            };
            *slot = v;
            seen = true;
        }
        seen.then_some(c)
    }

    /// `self - before`, divided by `runs` (per run).
    fn per_run_since(&self, before: &SqlCounters, runs: usize) -> SqlCounters {
        let n = runs.max(1) as f64;
        SqlCounters {
            plans_answered: (self.plans_answered - before.plans_answered) / n,
            plans_declined: (self.plans_declined - before.plans_declined) / n,
            scans: (self.scans - before.scans) / n,
            plan_rows: (self.plan_rows - before.plan_rows) / n,
            scan_rows: (self.scan_rows - before.scan_rows) / n,
        }
    }

    /// The "in SQL" cell.
    fn share(&self) -> String {
        let (a, d) = (self.plans_answered, self.plans_declined);
        if a + d == 0.0 {
            if self.scans > 0.0 {
                "none: scanned (no plan form)".into()
            } else {
                "no plan (metadata reads)".into()
            }
        } else {
            let plural = if a + d == 1.0 { "" } else { "s" };
            format!("{} of {} plan{plural}", count(a), count(a + d))
        }
    }
}

/// A per-run figure: an integer when it is one.
fn count(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v:.1}")
    }
}

/// One row of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SideQueryReport {
    /// The query.
    pub query: SideQuery,
    /// On the embedded store.
    pub embedded: SideOutcome,
    /// On ClickHouse.
    pub clickhouse: SideOutcome,
    /// ClickHouse's median divided by the embedded store's.
    pub ratio: Option<f64>,
    /// Whether the answers agree.
    pub answers: AnswerMatch,
    /// Runs of the query on ClickHouse (first and warm) the counters cover.
    pub clickhouse_runs: usize,
    /// The ClickHouse server's SQL counters, per run; `None` when its
    /// `/metrics` had none.
    pub sql_per_run: Option<SqlCounters>,
}

/// What the side-by-side benchmark measured.
#[derive(Clone, Debug, Serialize)]
pub struct SideBySideReport {
    /// The configuration.
    pub config: SideBySideConfig,
    /// The servers.
    pub servers: Servers,
    /// Where the benchmark ran.
    pub machine: MachineInfo,
    /// How it was started.
    pub command_line: String,
    /// What ClickHouse engine answered (e.g. chdb behind a Python front).
    pub clickhouse_engine: String,
    /// The queries' app.
    pub app: String,
    /// Start of the queried hour, nanoseconds.
    pub start_ns: i64,
    /// End of the queried hour, nanoseconds.
    pub end_ns: i64,
    /// The push into the embedded server.
    pub embedded_ingest: IngestReport,
    /// The push into the ClickHouse server.
    pub clickhouse_ingest: IngestReport,
    /// One row per query.
    pub queries: Vec<SideQueryReport>,
    /// Queries whose answers differ.
    pub mismatches: usize,
}

/// The request of a query: path and parameters.
fn request(
    config: &SideBySideConfig,
    q: &SideQuery,
    start_ns: i64,
    end_ns: i64,
) -> (&'static str, Vec<(&'static str, String)>) {
    let mut params = vec![("start", start_ns.to_string()), ("end", end_ns.to_string())];
    let path = match q.kind {
        SideKind::Log => {
            params.extend([
                ("query", q.text.clone()),
                ("limit", config.limit.to_string()),
                ("direction", "backward".into()),
            ]);
            "/loki/api/v1/query_range"
        }
        SideKind::Metric => {
            params.extend([
                ("query", q.text.clone()),
                ("step", format!("{}s", config.step_secs)),
            ]);
            "/loki/api/v1/query_range"
        }
        SideKind::Labels => "/loki/api/v1/labels",
        SideKind::Series => {
            params.push(("match[]", q.text.clone()));
            "/loki/api/v1/series"
        }
    };
    (path, params)
}

/// The part of an answer both servers must agree on.
fn compared_part(kind: SideKind, body: &Value) -> Value {
    match kind {
        SideKind::Log | SideKind::Metric => body["data"]["result"].clone(),
        SideKind::Labels | SideKind::Series => body["data"].clone(),
    }
}

/// The size of an answer.
fn size_of(kind: SideKind, text: &str, body: &Value) -> Result<ResultSize, String> {
    match kind {
        SideKind::Log | SideKind::Metric => result_size(text),
        SideKind::Labels | SideKind::Series => {
            let n = body["data"]
                .as_array()
                .ok_or("answer's data is not an array")?
                .len() as u64;
            Ok(ResultSize {
                result_type: if kind == SideKind::Labels {
                    "labels"
                } else {
                    "series"
                }
                .into(),
                series: n,
                values: n,
            })
        }
    }
}

/// Runs one query once: milliseconds and the parsed answer.
fn run_once(
    agent: &ureq::Agent,
    url: &str,
    params: &[(&str, &str)],
) -> Result<(f64, String, Value), SideOutcome> {
    let t0 = Instant::now();
    let reply = http::get(agent, url, &[], params).map_err(|e| SideOutcome::Failed {
        status: None,
        message: format!("{e:#}"),
    })?;
    let elapsed = t0.elapsed().as_secs_f64() * 1e3;
    if !reply.ok() {
        let message = http::short_message(&reply.body);
        return Err(SideOutcome::Failed {
            status: Some(reply.status),
            message,
        });
    }
    let body = serde_json::from_str(&reply.body).map_err(|e| SideOutcome::Failed {
        status: Some(reply.status),
        message: format!("answer is not JSON: {e}"),
    })?;
    Ok((elapsed, reply.body, body))
}

/// Times a query on one server: the first run, then `warm_runs` more. The
/// compared part of the first answer comes back with the outcome.
fn time_on(
    config: &SideBySideConfig,
    agent: &ureq::Agent,
    base: &str,
    q: &SideQuery,
    start_ns: i64,
    end_ns: i64,
) -> (SideOutcome, Option<Value>) {
    let (path, params) = request(config, q, start_ns, end_ns);
    let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let (first_ms, text, body) = match run_once(agent, &url, &params) {
        Ok(r) => r,
        Err(outcome) => return (outcome, None),
    };
    let size = match size_of(q.kind, &text, &body) {
        Ok(s) => s,
        Err(message) => {
            return (
                SideOutcome::Failed {
                    status: Some(200),
                    message,
                },
                None,
            )
        }
    };
    let mut warm_ms = Vec::with_capacity(config.warm_runs);
    for _ in 0..config.warm_runs {
        match run_once(agent, &url, &params) {
            Ok((t, _, _)) => warm_ms.push(t),
            Err(outcome) => return (outcome, None),
        }
    }
    let median_ms = if warm_ms.is_empty() {
        first_ms
    } else {
        median(&mut warm_ms.clone())
    };
    (
        SideOutcome::Answered {
            first_ms,
            median_ms,
            warm_ms,
            size,
        },
        Some(compared_part(q.kind, &body)),
    )
}

/// Where two answers first differ, as a short path (`[3].values[17]`).
pub fn first_difference(a: &Value, b: &Value) -> Option<String> {
    fn walk(a: &Value, b: &Value, path: &mut String) -> bool {
        match (a, b) {
            (Value::Array(x), Value::Array(y)) => {
                for (i, (p, q)) in x.iter().zip(y).enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    if walk(p, q, path) {
                        return true;
                    }
                    path.truncate(len);
                }
                if x.len() != y.len() {
                    path.push_str(&format!(" (length {} vs {})", x.len(), y.len()));
                    return true;
                }
                false
            }
            (Value::Object(x), Value::Object(y)) => {
                for (k, p) in x {
                    let len = path.len();
                    path.push_str(&format!(".{k}"));
                    match y.get(k) {
                        Some(q) if walk(p, q, path) => return true,
                        Some(_) => path.truncate(len),
                        None => {
                            path.push_str(" (missing on one side)");
                            return true;
                        }
                    }
                }
                if let Some(k) = y.keys().find(|k| !x.contains_key(*k)) {
                    path.push_str(&format!(".{k} (missing on one side)"));
                    return true;
                }
                false
            }
            _ => {
                if a != b {
                    path.push_str(&format!(": {a} vs {b}"));
                    true
                } else {
                    false
                }
            }
        }
    }
    let mut path = String::new();
    walk(a, b, &mut path).then(|| {
        if path.starts_with(':') {
            format!("value{path}")
        } else {
            path
        }
    })
}

fn scrape(agent: &ureq::Agent, base: &str) -> Option<SqlCounters> {
    let url = format!("{}/metrics", base.trim_end_matches('/'));
    match http::get(agent, &url, &[], &[]) {
        Ok(r) if r.ok() => SqlCounters::parse(&r.body),
        _ => None,
    }
}

fn push(
    config: &SideBySideConfig,
    url: &str,
    end_ns: i64,
    what: &str,
) -> anyhow::Result<IngestReport> {
    eprintln!("pushing {} lines into the {what} server", config.lines);
    let report = run_ingest_bench(&IngestBenchConfig {
        url: url.to_string(),
        concurrency: config.concurrency,
        batch_lines: config.batch_lines,
        lines: config.lines,
        streams: config.streams,
        seed: config.seed,
        shape: config.shape,
        span_secs: config.span_secs,
        end_ns: Some(end_ns),
        pregenerate: false,
        settle_timeout_secs: config.settle_timeout_secs,
        ..IngestBenchConfig::default()
    })?;
    anyhow::ensure!(
        report.lines_pushed == config.lines && report.failed_requests == 0,
        "the {what} server accepted {} of {} lines ({} failed requests: {})",
        report.lines_pushed,
        config.lines,
        report.failed_requests,
        report.first_error.as_deref().unwrap_or("no error text")
    );
    Ok(report)
}

/// Pushes the workload into both servers, then times each query of
/// [`side_by_side_queries`] on the embedded server and on the ClickHouse
/// server, reading the latter's SQL counters before and after.
/// `clickhouse_engine` describes what stands behind the ClickHouse server.
pub fn run_side_by_side(
    config: &SideBySideConfig,
    servers: &Servers,
    clickhouse_engine: &str,
) -> anyhow::Result<SideBySideReport> {
    let end_ns = config.end_ns.unwrap_or_else(now_ns);
    let embedded_ingest = push(config, &servers.embedded, end_ns, "embedded")?;
    let clickhouse_ingest = push(config, &servers.clickhouse, end_ns, "ClickHouse")?;
    let gen_config = IngestBenchConfig {
        lines: config.lines,
        streams: config.streams,
        seed: config.seed,
        shape: config.shape,
        span_secs: config.span_secs,
        end_ns: Some(end_ns),
        ..IngestBenchConfig::default()
    }
    .generator_config();
    let app = Generator::new(gen_config.clone())?
        .busiest_app()
        .to_string();
    let end_ns = gen_config.start_ns + gen_config.span_ns;
    let start_ns = end_ns - 3_600 * 1_000_000_000;

    let agent = http::agent(Duration::from_secs(config.timeout_secs));
    let mut queries = Vec::new();
    for q in side_by_side_queries(&app) {
        eprintln!("query {}: {}", q.id, q.name);
        let (embedded, want) = time_on(config, &agent, &servers.embedded, &q, start_ns, end_ns);
        let before = scrape(&agent, &servers.clickhouse);
        let (clickhouse, got) = time_on(config, &agent, &servers.clickhouse, &q, start_ns, end_ns);
        let after = scrape(&agent, &servers.clickhouse);
        let runs = match &clickhouse {
            SideOutcome::Answered { warm_ms, .. } => 1 + warm_ms.len(),
            SideOutcome::Failed { .. } => 1,
        };
        let sql_per_run = match (before, after) {
            (Some(b), Some(a)) => Some(a.per_run_since(&b, runs)),
            _ => None,
        };
        let answers = match (&want, &got) {
            (Some(w), Some(g)) => match first_difference(w, g) {
                None => AnswerMatch::Same,
                Some(detail) => AnswerMatch::Differ { detail },
            },
            _ => AnswerMatch::NotCompared,
        };
        let ratio = match (embedded.median_ms(), clickhouse.median_ms()) {
            (Some(e), Some(c)) if e > 0.0 => Some(c / e),
            _ => None,
        };
        queries.push(SideQueryReport {
            query: q,
            embedded,
            clickhouse,
            ratio,
            answers,
            clickhouse_runs: runs,
            sql_per_run,
        });
    }
    let mismatches = queries
        .iter()
        .filter(|q| matches!(q.answers, AnswerMatch::Differ { .. }))
        .count();
    Ok(SideBySideReport {
        config: config.clone(),
        servers: servers.clone(),
        machine: MachineInfo::detect(),
        command_line: command_line(),
        clickhouse_engine: clickhouse_engine.to_string(),
        app,
        start_ns,
        end_ns,
        embedded_ingest,
        clickhouse_ingest,
        queries,
        mismatches,
    })
}

fn outcome_cell(o: &SideOutcome) -> String {
    match o {
        SideOutcome::Answered { median_ms, .. } => ms(*median_ms),
        SideOutcome::Failed {
            status: Some(s),
            message,
        } => format!("failed ({s}: {})", cell(message)),
        SideOutcome::Failed {
            status: None,
            message,
        } => format!("failed ({})", cell(message)),
    }
}

fn returned_cell(kind: SideKind, o: &SideOutcome) -> String {
    let SideOutcome::Answered { size, .. } = o else {
        return "–".into();
    };
    match kind {
        SideKind::Log => format!("{} lines", size.values),
        SideKind::Metric => format!("{} series", size.series),
        SideKind::Labels => format!("{} names", size.series),
        SideKind::Series => format!("{} streams", size.series),
    }
}

impl std::fmt::Display for SideBySideReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.config;
        writeln!(f, "## Side by side: embedded store and ClickHouse")?;
        writeln!(f)?;
        writeln!(f, "- machine: {}", self.machine)?;
        writeln!(f, "- command: `{}`", self.command_line)?;
        writeln!(f, "- ClickHouse: {}", self.clickhouse_engine)?;
        writeln!(
            f,
            "- data: {} lines over {} streams (seed {}, shape {}), pushed into both; span ends at {} ns; APP = {}",
            c.lines, c.streams, c.seed, c.shape.name(), self.end_ns, self.app
        )?;
        writeln!(
            f,
            "- push: embedded {:.0} lines/s, ClickHouse {:.0} lines/s",
            self.embedded_ingest.lines_per_second, self.clickhouse_ingest.lines_per_second
        )?;
        writeln!(
            f,
            "- range queries over the hour, step {} s (log queries: limit {}, backward); ms = median of {} warm runs after a first run; in SQL and rows shipped: the ClickHouse server's `/metrics` counters, per run",
            c.step_secs, c.limit, c.warm_runs
        )?;
        writeln!(
            f,
            "- answers: {} of {} queries differ",
            self.mismatches,
            self.queries.len()
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "| # | query | LogQL / matcher | returned | embedded ms | ClickHouse ms | CH / embedded | in SQL | rows shipped (plan, scan) | answers |"
        )?;
        writeln!(f, "|---|---|---|---|---:|---:|---:|---|---:|---|")?;
        for q in &self.queries {
            let text = if q.query.text.is_empty() {
                "–".to_string()
            } else {
                format!("`` {} ``", cell(&q.query.text))
            };
            let ratio = q.ratio.map_or("–".into(), |r| format!("{r:.2}"));
            let (share, rows) = match &q.sql_per_run {
                Some(s) => (
                    s.share(),
                    format!("{}, {}", count(s.plan_rows), count(s.scan_rows)),
                ),
                None => ("unknown (no counters)".into(), "–".into()),
            };
            let answers = match &q.answers {
                AnswerMatch::Same => "same".to_string(),
                AnswerMatch::Differ { detail } => format!("**differ** at {}", cell(detail)),
                AnswerMatch::NotCompared => "not compared".to_string(),
            };
            writeln!(
                f,
                "| {} | {} | {text} | {} | {} | {} | {ratio} | {share} | {rows} | {answers} |",
                q.query.id,
                q.query.name,
                returned_cell(q.query.kind, &q.embedded),
                outcome_cell(&q.embedded),
                outcome_cell(&q.clickhouse),
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::testserver;
    use serde_json::json;

    #[test]
    fn nine_queries_one_per_kind_of_the_page() {
        let qs = side_by_side_queries("checkout-api");
        assert_eq!(qs.len(), 9);
        for (i, q) in qs.iter().enumerate() {
            assert_eq!(q.id as usize, i + 1);
        }
        let kinds: Vec<SideKind> = qs.iter().map(|q| q.kind).collect();
        use SideKind::*;
        assert_eq!(
            kinds,
            [Log, Log, Metric, Metric, Metric, Metric, Metric, Labels, Series]
        );
        assert!(qs[0].text.contains("|= \"completed\""));
        assert!(qs[1].text.contains("| json | level=\"error\""));
        assert!(qs[2].text.starts_with("count_over_time("));
        assert!(qs[3].text.contains("rate(") && qs[3].text.contains("|~"));
        assert!(qs[4].text.starts_with("topk("));
        assert!(qs[5].text.contains("unwrap duration_ms"));
        assert!(qs[6].text.starts_with("bytes_over_time("));
        assert_eq!(qs[8].text, "{app=\"checkout-api\"}");
    }

    #[test]
    fn sql_counters_are_read_from_the_metrics_page() {
        let page = "# HELP x y\n# TYPE runakefli_clickhouse_plans_answered_total counter\n\
            runakefli_clickhouse_plans_answered_total 7\n\
            runakefli_clickhouse_plans_declined_total 3\n\
            runakefli_clickhouse_scans_total 4\n\
            runakefli_clickhouse_rows_shipped_total{path=\"plan\"} 60\n\
            runakefli_clickhouse_rows_shipped_total{path=\"scan\"} 900\n\
            runakefli_uptime_seconds 1.5\n";
        let after = SqlCounters::parse(page).unwrap();
        assert_eq!(after.plans_answered, 7.0);
        assert_eq!(after.scan_rows, 900.0);
        let before = SqlCounters {
            plans_answered: 1.0,
            plans_declined: 1.0,
            scans: 2.0,
            plan_rows: 0.0,
            scan_rows: 300.0,
        };
        let per_run = after.per_run_since(&before, 2);
        assert_eq!(per_run.plans_answered, 3.0);
        assert_eq!(per_run.plans_declined, 1.0);
        assert_eq!(per_run.scan_rows, 300.0);
        assert_eq!(per_run.share(), "3 of 4 plans");
        assert_eq!(SqlCounters::parse("runakefli_uptime_seconds 1\n"), None);
        assert_eq!(
            SqlCounters::default().share(),
            "no plan (metadata reads)".to_string()
        );
    }

    #[test]
    fn differences_are_located() {
        let a = json!([{"metric": {"app": "a"}, "values": [[1, "2"], [2, "3"]]}]);
        let mut b = a.clone();
        assert_eq!(first_difference(&a, &b), None);
        b[0]["values"][1][1] = json!("4");
        assert_eq!(
            first_difference(&a, &b).unwrap(),
            "[0].values[1][1]: \"3\" vs \"4\""
        );
        let c = json!([{"metric": {"app": "a"}, "values": [[1, "2"]]}]);
        assert_eq!(
            first_difference(&a, &c).unwrap(),
            "[0].values (length 2 vs 1)"
        );
        assert_eq!(
            first_difference(&json!(1), &json!(2)).unwrap(),
            "value: 1 vs 2"
        );
    }

    fn respond(line: &str) -> (u16, String) {
        if line.starts_with("GET /loki/api/v1/query_range") && line.contains("unwrap") {
            (400, "not supported here".into())
        } else if line.starts_with("GET /loki/api/v1/query_range") {
            (
                200,
                r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"]]}]}}"#
                    .into(),
            )
        } else if line.starts_with("GET /loki/api/v1/labels")
            || line.starts_with("GET /loki/api/v1/series")
        {
            (200, r#"{"status":"success","data":["app","pod"]}"#.into())
        } else if line.starts_with("GET /metrics") {
            (
                200,
                "runakefli_clickhouse_plans_answered_total 2\nrunakefli_clickhouse_plans_declined_total 1\n"
                    .into(),
            )
        } else if line.starts_with("GET /admin/storage/stats") {
            (200, r#"{"merges_running":0,"parts":1}"#.into())
        } else {
            (204, String::new())
        }
    }

    #[test]
    fn both_servers_are_pushed_timed_and_compared() {
        let (embedded, seen_e) = testserver::start(respond);
        let (clickhouse, seen_c) = testserver::start(respond);
        let config = SideBySideConfig {
            lines: 500,
            streams: 20,
            warm_runs: 2,
            end_ns: Some(1_790_812_800_000_000_000),
            ..SideBySideConfig::default()
        };
        let servers = Servers {
            embedded,
            clickhouse,
        };
        let report = run_side_by_side(&config, &servers, "test server").unwrap();
        assert_eq!(report.queries.len(), 9);
        assert_eq!(report.mismatches, 0);
        let q1 = &report.queries[0];
        assert_eq!(q1.answers, AnswerMatch::Same);
        assert_eq!(q1.clickhouse_runs, 3);
        // The fixed page does not move: no delta.
        assert_eq!(q1.sql_per_run, Some(SqlCounters::default()));
        assert!(q1.ratio.is_some());
        let q6 = &report.queries[5];
        assert!(matches!(
            q6.clickhouse,
            SideOutcome::Failed {
                status: Some(400),
                ..
            }
        ));
        assert_eq!(q6.answers, AnswerMatch::NotCompared);
        assert!(matches!(
            &report.queries[7].embedded,
            SideOutcome::Answered { size, .. } if size.series == 2
        ));
        let text = report.to_string();
        assert!(text.contains("| 9 | series |"), "{text}");
        assert!(text.contains("failed (400"), "{text}");
        serde_json::to_string(&report).unwrap();
        for seen in [seen_e, seen_c] {
            let seen = seen.lock().unwrap();
            assert!(seen
                .iter()
                .any(|(l, _)| l.starts_with("POST /loki/api/v1/push")));
            assert!(seen.iter().any(
                |(l, _)| l.starts_with("GET /loki/api/v1/series") && l.contains("match%5B%5D=")
            ));
            // 9 queries, 3 runs each.
            let queries = seen
                .iter()
                .filter(|(l, _)| {
                    l.starts_with("GET /loki/api/v1/query_range")
                        || l.starts_with("GET /loki/api/v1/labels")
                        || l.starts_with("GET /loki/api/v1/series")
                })
                .count();
            assert!(queries >= 25, "{queries}");
        }
    }
}
