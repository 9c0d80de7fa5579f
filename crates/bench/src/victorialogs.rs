//! VictoriaLogs beside Rúnakefli in one `bench query` run (issue 44): the
//! benchmark starts a `victoria-logs` binary the user built (it is never part
//! of this project), pushes the same generated lines into it over its Loki
//! push endpoint, and times each needle query's LogsQL twin right after the
//! LogQL query on Rúnakefli, so both see the same machine at the same moment.
//!
//! How the two are made comparable:
//! - lines are pushed with `-loki.disableMessageParsing`, so each line is
//!   VictoriaLogs' `_msg` whole, as Rúnakefli keeps it; the stream labels
//!   become its stream fields;
//! - `|= "x"` (a substring of the line) is timed as the phrase filter `"x"`
//!   on `_msg` (words at word boundaries: for a needle that is whole words,
//!   the same lines);
//! - "the newest N lines" is `/select/logsql/query` with `limit=N`, which
//!   VictoriaLogs answers with the newest N;
//! - `sum(count_over_time(… [1m]))` is `/select/logsql/stats_query_range`
//!   of `<filter> | stats count()` with a one-minute step, and `sum by (app)`
//!   adds `by (app)`.
//!
//! Answers are compared by size: lines for log queries, series and the sum
//! of all samples for metric queries.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::Serialize;

use crate::http;
use crate::stats::median;

/// What a LogsQL query asks, for the endpoint and the answer's size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogsqlKind {
    /// The newest `limit` matching lines (`/select/logsql/query`).
    Newest,
    /// Matching lines counted per step (`/select/logsql/stats_query_range`).
    Hits,
}

/// The LogsQL twin of a LogQL query.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Logsql {
    /// The query text.
    pub text: String,
    /// Its endpoint.
    pub kind: LogsqlKind,
}

impl Logsql {
    /// The newest lines holding `needle` (a phrase filter on `_msg`).
    pub fn newest(needle: &str) -> Logsql {
        Logsql {
            text: phrase(needle),
            kind: LogsqlKind::Newest,
        }
    }

    /// The lines holding `needle` counted per step, optionally by a field.
    pub fn hits(needle: &str, by: Option<&str>) -> Logsql {
        let by = by.map_or(String::new(), |f| format!(" by ({f})"));
        Logsql {
            text: format!("{} | stats{by} count() hits", phrase(needle)),
            kind: LogsqlKind::Hits,
        }
    }
}

/// `needle` as a LogsQL phrase filter (quoted, `"` and `\` escaped).
fn phrase(needle: &str) -> String {
    let mut out = String::with_capacity(needle.len() + 2);
    out.push('"');
    for c in needle.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// One LogsQL query's timings and answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VictoriaLogsRun {
    /// The query.
    pub query: Logsql,
    /// First run after a restart, milliseconds (median of the cold runs).
    pub cold_ms: f64,
    /// Median of the warm runs, milliseconds.
    pub warm_median_ms: f64,
    /// Every warm run, milliseconds.
    pub warm_ms: Vec<f64>,
    /// Lines returned (log queries) or series (metric queries).
    pub returned: u64,
    /// Sum of all samples (metric queries).
    pub total: Option<f64>,
}

/// How each LogsQL query is run: over which range, and how often.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunPlan {
    /// Start of the queried range, nanoseconds since the epoch.
    pub start_ns: i64,
    /// End of the queried range.
    pub end_ns: i64,
    /// Step of stats queries, seconds.
    pub step_secs: u64,
    /// Lines a newest-lines query returns at most.
    pub limit: u32,
    /// Cold runs (the median is kept).
    pub cold_runs: usize,
    /// Warm runs after them.
    pub warm_runs: usize,
    /// Restart the process before each cold run.
    pub restart: bool,
}

/// A `victoria-logs` process the benchmark started and may restart.
pub struct VictoriaLogs {
    binary: PathBuf,
    data_dir: PathBuf,
    child: Child,
    url: String,
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl VictoriaLogs {
    /// Starts `binary` on a free loopback port with its data in `data_dir`.
    pub fn start(binary: &Path, data_dir: &Path) -> anyhow::Result<VictoriaLogs> {
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("creating {}", data_dir.display()))?;
        let (child, url) = spawn(binary, data_dir)?;
        Ok(VictoriaLogs {
            binary: binary.to_path_buf(),
            data_dir: data_dir.to_path_buf(),
            child,
            url,
        })
    }

    /// Base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The push base for the ingest driver: Loki's push path goes after it.
    pub fn push_base(&self) -> String {
        format!("{}/insert", self.url)
    }

    /// Its data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Makes everything pushed searchable (`/internal/force_flush`).
    pub fn flush(&self) -> anyhow::Result<()> {
        let agent = http::agent(Duration::from_secs(600));
        let r = http::get(
            &agent,
            &format!("{}/internal/force_flush", self.url),
            &[],
            &[],
        )?;
        anyhow::ensure!(r.ok(), "force_flush answered {}: {}", r.status, r.body);
        Ok(())
    }

    /// Stops it, runs `between`, and starts it again on the same data.
    pub fn restart(&mut self, between: &mut dyn FnMut()) -> anyhow::Result<()> {
        self.stop();
        between();
        let (child, url) = spawn(&self.binary, &self.data_dir)?;
        self.child = child;
        self.url = url;
        Ok(())
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Runs `q` over the plan's range once; milliseconds and the body.
    fn run_once(
        &self,
        agent: &ureq::Agent,
        q: &Logsql,
        plan: &RunPlan,
    ) -> anyhow::Result<(f64, String)> {
        let (start, end) = (plan.start_ns.to_string(), plan.end_ns.to_string());
        let (step, limit) = (format!("{}s", plan.step_secs), plan.limit.to_string());
        let mut params: Vec<(&str, &str)> = vec![
            ("query", q.text.as_str()),
            ("start", start.as_str()),
            ("end", end.as_str()),
        ];
        let path = match q.kind {
            LogsqlKind::Newest => {
                params.push(("limit", limit.as_str()));
                "/select/logsql/query"
            }
            LogsqlKind::Hits => {
                params.push(("step", step.as_str()));
                "/select/logsql/stats_query_range"
            }
        };
        let t0 = Instant::now();
        let reply = http::get(agent, &format!("{}{path}", self.url), &[], &params)?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        if !reply.ok() {
            bail!("{} {}", reply.status, http::short_message(&reply.body));
        }
        Ok((ms, reply.body))
    }

    /// Times `q` as `plan` says: its cold runs (each after a restart when
    /// it says so, `between` running while the process is down), then its
    /// warm runs.
    pub fn time(
        &mut self,
        q: &Logsql,
        plan: &RunPlan,
        between: &mut dyn FnMut(),
    ) -> anyhow::Result<VictoriaLogsRun> {
        let mut cold = Vec::new();
        let mut body = String::new();
        for _ in 0..plan.cold_runs.max(1) {
            if plan.restart {
                self.restart(between)?;
            }
            let agent = http::agent(Duration::from_secs(600));
            let (ms, b) = self.run_once(&agent, q, plan)?;
            cold.push(ms);
            body = b;
        }
        let agent = http::agent(Duration::from_secs(600));
        let mut warm = Vec::with_capacity(plan.warm_runs);
        for _ in 0..plan.warm_runs {
            warm.push(self.run_once(&agent, q, plan)?.0);
        }
        let (returned, total) = answer_size(&q.kind, &body)?;
        Ok(VictoriaLogsRun {
            query: q.clone(),
            cold_ms: median(&mut cold),
            warm_median_ms: median(&mut warm.clone()),
            warm_ms: warm,
            returned,
            total,
        })
    }
}

impl Drop for VictoriaLogs {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts the binary on a free port and waits (up to 60 s) for `/health`.
fn spawn(binary: &Path, data_dir: &Path) -> anyhow::Result<(Child, String)> {
    let port = free_port()?;
    let mut child = Command::new(binary)
        .arg(format!("-storageDataPath={}", data_dir.display()))
        .arg(format!("-httpListenAddr=127.0.0.1:{port}"))
        .arg("-loki.disableMessageParsing")
        .arg("-retentionPeriod=100y")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let url = format!("http://127.0.0.1:{port}");
    let agent = http::agent(Duration::from_secs(2));
    let t0 = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            bail!("{} exited before it was ready: {status}", binary.display());
        }
        if http::get(&agent, &format!("{url}/health"), &[], &[]).is_ok_and(|r| r.ok()) {
            return Ok((child, url));
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{} not ready after 60 s", binary.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Lines (newest) or series and the sum of all samples (hits) of an answer.
fn answer_size(kind: &LogsqlKind, body: &str) -> anyhow::Result<(u64, Option<f64>)> {
    match kind {
        LogsqlKind::Newest => Ok((
            body.lines().filter(|l| !l.trim().is_empty()).count() as u64,
            None,
        )),
        LogsqlKind::Hits => {
            let v: serde_json::Value =
                serde_json::from_str(body).context("stats answer is not JSON")?;
            let series = v["data"]["result"]
                .as_array()
                .context("stats answer has no data.result")?;
            let total = series
                .iter()
                .flat_map(|s| s["values"].as_array().into_iter().flatten())
                .filter_map(|p| p[1].as_str()?.parse::<f64>().ok())
                .sum();
            Ok((series.len() as u64, Some(total)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needles_become_escaped_phrase_filters() {
        assert_eq!(Logsql::newest("a765427102").text, r#""a765427102""#);
        assert_eq!(
            Logsql::newest(r#"say "hi" \o/"#).text,
            r#""say \"hi\" \\o/""#
        );
        assert_eq!(
            Logsql::hits("payment declined", None).text,
            r#""payment declined" | stats count() hits"#
        );
        assert_eq!(
            Logsql::hits("error", Some("app")).text,
            r#""error" | stats by (app) count() hits"#
        );
    }

    #[test]
    fn answers_are_sized_as_lines_or_series_and_totals() {
        let lines = "{\"_msg\":\"a\"}\n{\"_msg\":\"b\"}\n";
        assert_eq!(answer_size(&LogsqlKind::Newest, lines).unwrap(), (2, None));
        let stats = r#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"app":"a"},"values":[[1,"3"],[2,"4"]]},
            {"metric":{"app":"b"},"values":[[1,"1"]]}]}}"#;
        assert_eq!(
            answer_size(&LogsqlKind::Hits, stats).unwrap(),
            (2, Some(8.0))
        );
        assert!(answer_size(&LogsqlKind::Hits, "not json").is_err());
    }
}
