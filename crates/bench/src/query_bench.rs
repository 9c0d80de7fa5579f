//! The query benchmark: pushes the reference workload (one hour), flushes, then times
//! a query set ([`QuerySet`]): the seven reference LogQL queries as range queries
//! (step 60 s, as Grafana would) and as instant queries at the end of the hour, the
//! fourteen range queries of issue 7, or the needle queries of the workload shape
//! ([`QuerySet::Needles`]). Cold is the first run, after a server
//! restart when the benchmark controls the server ([`ServerProcess`]); warm is the
//! median of the runs after it. A query the server rejects is reported as
//! unsupported, never fatal.

use std::time::{Duration, Instant};

use crate::data_marker;
use crate::generator::Generator;
use crate::http;
use crate::ingest_bench::{run_ingest_bench, IngestBenchConfig, IngestReport};
use crate::machine::{command_line, MachineInfo};
use crate::needles::find_needles;
use crate::needles_varied::find_needle_set;
use crate::own_server::{drop_page_cache, peak_rss, ServerProcess};
use crate::procstat::AnonPeakSampler;
pub use crate::query_config::{QueryBenchConfig, VictoriaLogsTarget};
pub use crate::query_report::{
    result_size, ColdRuns, DataSource, QueryOutcome, QueryReport, QueryTiming, ResultSize,
};
pub use crate::query_set::{
    issue7_queries, needles_queries, reference_queries, QueryMode, QuerySet, QuerySpec, ISSUE7_APP,
};
use crate::stats::median;
use crate::victorialogs::{RunPlan, VictoriaLogs};
use crate::vocab::COMMON_WORD;

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
        let message = http::short_message(&reply.body);
        return Err(QueryOutcome::Unsupported {
            status: reply.status,
            message,
        });
    }
    Ok((ms, reply.body))
}

/// The queried range and where to send queries.
struct Target<'a> {
    base: &'a str,
    start_ns: i64,
    end_ns: i64,
}

fn time_query(
    config: &QueryBenchConfig,
    agent: &ureq::Agent,
    spec: &QuerySpec,
    mode: QueryMode,
    target: &Target,
) -> QueryOutcome {
    let base = target.base.trim_end_matches('/');
    let (start, end, step, limit) = (
        target.start_ns.to_string(),
        target.end_ns.to_string(),
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

/// Writes the data marker when the push was complete: every line accepted, flushed,
/// merges settled. Returns the marker's path or why it was not written.
fn mark_data(
    config: &QueryBenchConfig,
    ingest: &IngestReport,
    end_ns: i64,
) -> Option<Result<String, String>> {
    let dir = config.marker_dir.as_ref()?;
    let incomplete = if ingest.lines_pushed != config.lines || ingest.failed_requests > 0 {
        Some(format!(
            "{} of {} lines accepted, {} failed requests",
            ingest.lines_pushed, config.lines, ingest.failed_requests
        ))
    } else if !matches!(ingest.flush, Ok(s) if (200..300).contains(&s)) {
        Some(format!("flush failed: {:?}", ingest.flush))
    } else if !ingest.settle.settled {
        Some(format!(
            "merges did not settle ({})",
            ingest.settle.note.as_deref().unwrap_or("unknown")
        ))
    } else {
        None
    };
    Some(match incomplete {
        Some(why) => Err(why),
        None => data_marker::write_marker(dir, &config.marker(end_ns))
            .map(|()| data_marker::marker_path(dir).display().to_string())
            .map_err(|e| format!("writing the marker: {e}")),
    })
}

/// Starts VictoriaLogs when the config names one, and pushes the workload
/// into it unless its data directory holds that push already.
fn start_victorialogs(
    config: &QueryBenchConfig,
    ingest_config: &IngestBenchConfig,
    end_ns: i64,
) -> anyhow::Result<Option<VictoriaLogs>> {
    let Some(target) = &config.victorialogs else {
        return Ok(None);
    };
    let vl = VictoriaLogs::start(&target.binary, &target.data_dir)?;
    let wanted = config.marker(end_ns);
    let held = data_marker::read_marker(&target.data_dir)?;
    if held.is_some_and(|m| m.matches(&wanted, true)) {
        eprintln!(
            "{} already holds this push: VictoriaLogs queries it as it is",
            target.data_dir.display()
        );
        return Ok(Some(vl));
    }
    eprintln!("pushing the same {} lines into VictoriaLogs", config.lines);
    let report = run_ingest_bench(&IngestBenchConfig {
        url: vl.push_base(),
        settle_timeout_secs: 0,
        pid: None,
        data_dir: None,
        ..ingest_config.clone()
    })?;
    vl.flush()?;
    if report.lines_pushed == config.lines && report.failed_requests == 0 {
        data_marker::write_marker(vl.data_dir(), &wanted)?;
    } else {
        eprintln!(
            "VictoriaLogs accepted {} of {} lines ({} failed requests): its data is not marked for reuse",
            report.lines_pushed, config.lines, report.failed_requests
        );
    }
    Ok(Some(vl))
}

/// Pushes the workload (unless `push` is false), then times the queries of
/// `config.set`. With a `server` the benchmark controls, each query's cold run
/// follows a restart (unless `cold_restart` is off) and peak RSS is read from it.
pub fn run_query_bench(
    config: &QueryBenchConfig,
    mut server: Option<&mut dyn ServerProcess>,
) -> anyhow::Result<QueryReport> {
    let mut url = server
        .as_ref()
        .map_or(config.url.clone(), |s| s.url().to_string());
    let ingest_config = IngestBenchConfig {
        url: url.clone(),
        concurrency: config.concurrency,
        batch_lines: config.batch_lines,
        lines: config.lines,
        streams: config.streams,
        seed: config.seed,
        shape: config.shape,
        span_secs: config.span_secs,
        end_ns: Some(config.end_ns.unwrap_or_else(crate::ingest_bench::now_ns)),
        pregenerate: false,
        settle_timeout_secs: config.settle_timeout_secs,
        tenant: config.tenant.clone(),
        ..IngestBenchConfig::default()
    };
    let gen_config = ingest_config.generator_config();
    let end_ns = gen_config.start_ns + gen_config.span_ns;
    let start_ns = end_ns - 3_600 * 1_000_000_000;
    let app = match config.set {
        QuerySet::Workload | QuerySet::Needles => Generator::new(gen_config.clone())?
            .busiest_app()
            .to_string(),
        QuerySet::Issue7 => ISSUE7_APP.to_string(),
    };
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
    let data = match &ingest {
        Some(r) => DataSource::Pushed {
            marker: mark_data(config, r, end_ns),
        },
        None => match (&server, &config.marker_dir) {
            (Some(_), Some(dir)) => DataSource::Reused {
                dir: dir.display().to_string(),
            },
            _ => DataSource::External,
        },
    };

    let t0 = Instant::now();
    let (needles, needle_set) = match config.set {
        QuerySet::Workload => (None, None),
        QuerySet::Issue7 => {
            eprintln!("picking needles from {} generated lines", config.lines);
            let n = find_needles(&gen_config, config.lines, start_ns, end_ns)?;
            (Some(n), None)
        }
        QuerySet::Needles => {
            eprintln!(
                "picking needles of the {} shape from {} generated lines",
                config.shape.name(),
                config.lines
            );
            let n = find_needle_set(&gen_config, config.lines, start_ns, end_ns)?;
            (None, Some(n))
        }
    };
    let needle_seconds = (config.set != QuerySet::Workload).then(|| t0.elapsed().as_secs_f64());
    let specs = match (&needles, &needle_set) {
        (Some(n), _) => issue7_queries(&app, n),
        (_, Some(n)) => needles_queries(n, config.limit),
        _ => reference_queries(&app, COMMON_WORD),
    };

    let mut victorialogs = start_victorialogs(config, &ingest_config, end_ns)?;
    let vl_plan = RunPlan {
        start_ns,
        end_ns,
        step_secs: config.step_secs,
        limit: config.limit,
        cold_runs: config.cold_runs,
        warm_runs: config.warm_runs,
        restart: config.cold_restart,
    };
    let agent = http::agent(Duration::from_secs(config.timeout_secs));
    let restart = config.cold_restart && server.is_some();
    let mut cold = ColdRuns {
        restarted: restart,
        ..ColdRuns::default()
    };
    let mut cache_tried = !config.drop_page_cache;
    if restart && !config.drop_page_cache {
        cold.page_cache_note = Some("not tried (turned off)".into());
    }
    let mut queries = Vec::new();
    // Extra cold runs (each after its own restart) answer no more than the
    // first run of `time_query`: no warm runs.
    let cold_only = QueryBenchConfig {
        warm_runs: 0,
        ..config.clone()
    };
    let cold_runs = if restart { config.cold_runs.max(1) } else { 1 };
    // Restarts the server when the benchmark controls it; the PID answering.
    let mut restart_server = |url: &mut String| -> anyhow::Result<Option<u32>> {
        if let (true, Some(s)) = (restart, server.as_deref_mut()) {
            s.restart(&mut || {
                if cache_tried && !cold.page_cache_dropped {
                    return;
                }
                cache_tried = true;
                match drop_page_cache() {
                    Ok(()) => cold.page_cache_dropped = true,
                    Err(e) => cold.page_cache_note = Some(e),
                }
            })?;
            *url = s.url().to_string();
        }
        Ok(server.as_ref().map(|s| s.pid()).or(config.pid))
    };
    for spec in specs {
        for &mode in config.set.modes() {
            let mut extra_cold = Vec::new();
            for _ in 1..cold_runs {
                restart_server(&mut url)?;
                let target = Target {
                    base: &url,
                    start_ns,
                    end_ns,
                };
                if let QueryOutcome::Answered { cold_ms, .. } =
                    time_query(&cold_only, &agent, &spec, mode, &target)
                {
                    extra_cold.push(cold_ms);
                }
            }
            let pid = restart_server(&mut url)?;
            let target = Target {
                base: &url,
                start_ns,
                end_ns,
            };
            let sampler = pid.map(|p| AnonPeakSampler::start(p, Duration::from_millis(10)));
            let mut outcome = time_query(config, &agent, &spec, mode, &target);
            if let QueryOutcome::Answered { cold_ms, .. } = &mut outcome {
                extra_cold.push(*cold_ms);
                *cold_ms = median(&mut extra_cold);
            }
            let peak_anon = sampler.and_then(AnonPeakSampler::stop);
            // VictoriaLogs right after us, under the same machine load.
            let vl_run = match (victorialogs.as_mut(), &spec.logsql) {
                (Some(vl), Some(q)) => {
                    let drop_cache = config.drop_page_cache;
                    let run = vl.time(q, &vl_plan, &mut || {
                        if drop_cache {
                            let _ = drop_page_cache();
                        }
                    });
                    Some(run.map_err(|e| format!("{e:#}")))
                }
                _ => None,
            };
            let mut spec = spec.clone();
            if let Some(Ok(r)) = &vl_run {
                spec.victorialogs_ms = Some(r.warm_median_ms);
                spec.target_ms = Some(r.warm_median_ms / 2.0);
            }
            let mut timing = QueryTiming::new(
                spec,
                mode,
                outcome,
                restart,
                pid.and_then(peak_rss),
                peak_anon,
            );
            timing.victorialogs = vl_run;
            queries.push(timing);
        }
    }
    let peak_rss_bytes = queries.iter().filter_map(|q| q.peak_rss_bytes).max();
    let peak_anon_bytes = queries.iter().filter_map(|q| q.peak_anon_bytes).max();
    let peak_rss_note = if restart {
        "highest VmHWM of the server processes that answered the queries (one per query, started after the push)"
    } else if config.push {
        "VmHWM of the server since it started, push included"
    } else {
        "VmHWM of the server since it started"
    }
    .to_string();
    Ok(QueryReport {
        config: config.clone(),
        machine: MachineInfo::detect(),
        command_line: command_line(),
        app,
        word: COMMON_WORD.to_string(),
        needles,
        needle_set,
        needle_seconds,
        start_ns,
        end_ns,
        data,
        ingest,
        cold,
        peak_rss_bytes,
        peak_rss_note,
        peak_anon_bytes,
        queries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::Shape;
    use crate::http::testserver;

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

    #[test]
    fn rejected_queries_are_reported_as_unsupported() {
        let (url, seen) = testserver::start(respond);
        let config = QueryBenchConfig {
            url,
            lines: 300,
            streams: 50,
            warm_runs: 2,
            ..QueryBenchConfig::default()
        };
        let report = run_query_bench(&config, None).unwrap();
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
        assert!(!report.cold.restarted);
        let text = report.to_string();
        assert!(text.contains("unsupported (status 400"));
        serde_json::to_string(&report).unwrap();
        let seen = seen.lock().unwrap();
        assert!(seen
            .iter()
            .any(|(l, _)| l.contains("query_range") && l.contains("step=60s")));
        assert!(seen.iter().any(|(l, _)| l.contains("direction=backward")));
    }

    #[test]
    fn needles_set_checks_every_needle_query_against_its_lines() {
        let (url, seen) = testserver::start(respond);
        let config = QueryBenchConfig {
            url,
            set: QuerySet::Needles,
            shape: Shape::Varied,
            lines: 2_000,
            streams: 50,
            warm_runs: 1,
            end_ns: Some(1_790_812_800_000_000_000),
            ..QueryBenchConfig::default()
        };
        let report = run_query_bench(&config, None).unwrap();
        let set = report.needle_set.clone().unwrap();
        assert_eq!(set.shape, Shape::Varied);
        assert_eq!(set.needles.len(), 9);
        assert_eq!(report.queries.len(), 16);
        assert!(report.needle_seconds.is_some());
        assert!(report
            .queries
            .iter()
            .all(|q| q.mode == QueryMode::Range && q.query.victorialogs_ms.is_none()));
        // The test server answers every log query with one line.
        let checks: Vec<Option<bool>> = report
            .queries
            .iter()
            .map(QueryTiming::returned_expected)
            .collect();
        for (q, check) in report.queries.iter().zip(&checks) {
            match q.query.expected_lines {
                Some(e) => assert_eq!(*check, Some(e == 1), "{}", q.query.logql),
                None => assert_eq!(*check, None),
            }
        }
        let text = report.to_string();
        assert!(text.contains("## Query benchmark: set needles"), "{text}");
        assert!(text.contains("shape varied"), "{text}");
        assert!(text.contains(&set.needles[0].value), "{text}");
        assert!(text.contains("(**expected 100: MISMATCH**)"), "{text}");
        let ok = checks.iter().filter(|c| **c == Some(true)).count();
        assert!(
            text.contains(&format!("Expected lines: {ok} of 12 queries")),
            "{text}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["config"]["shape"], "varied");
        assert_eq!(json["needle_set"]["needles"][0]["kind"], "uid_json");
        let seen = seen.lock().unwrap();
        let pushed = seen
            .iter()
            .filter(|(l, _)| l.starts_with("POST /loki/api/v1/push"))
            .count();
        assert!(pushed > 0);
    }

    /// A "server" that only counts restarts; the test server answers the queries.
    struct FakeServer {
        url: String,
        restarts: usize,
    }

    impl ServerProcess for FakeServer {
        fn url(&self) -> &str {
            &self.url
        }
        fn pid(&self) -> u32 {
            std::process::id()
        }
        fn restart(&mut self, between: &mut dyn FnMut()) -> anyhow::Result<()> {
            between();
            self.restarts += 1;
            Ok(())
        }
    }

    #[test]
    fn issue7_set_restarts_before_each_query_and_marks_the_data() {
        let (url, seen) = testserver::start(respond);
        let dir = tempfile::tempdir().unwrap();
        let mut server = FakeServer { url, restarts: 0 };
        let config = QueryBenchConfig {
            set: QuerySet::Issue7,
            lines: 2_000,
            streams: 50,
            warm_runs: 1,
            end_ns: Some(1_790_812_800_000_000_000),
            marker_dir: Some(dir.path().to_path_buf()),
            drop_page_cache: false,
            ..QueryBenchConfig::default()
        };
        let report = run_query_bench(&config, Some(&mut server)).unwrap();
        assert_eq!(server.restarts, 14);
        assert_eq!(report.queries.len(), 14);
        assert!(report
            .queries
            .iter()
            .all(|q| q.mode == QueryMode::Range && q.restarted));
        assert!(report.peak_rss_bytes.unwrap() > 0);
        // Dropping the page cache would hit the whole machine: off in tests.
        assert!(!report.cold.page_cache_dropped);
        assert_eq!(
            report.cold.page_cache_note.as_deref(),
            Some("not tried (turned off)")
        );
        let needles = report.needles.clone().unwrap();
        assert_eq!(needles.trace_id_lines, 1);
        // The log queries are answered (one line each), with a ratio to the target.
        let q4 = &report.queries[3];
        assert!(q4.query.logql.contains(&needles.trace_id));
        assert!(q4.warm_to_target.is_some());
        let marker = data_marker::read_marker(dir.path()).unwrap().unwrap();
        assert_eq!(marker, config.marker(1_790_812_800_000_000_000));
        assert!(matches!(
            report.data,
            DataSource::Pushed {
                marker: Some(Ok(_))
            }
        ));
        let text = report.to_string();
        assert!(text.contains("| 4 | `` {namespace=~\".+\"} \\|= \""));
        assert!(text.contains("1 line (expected 1: ok)"), "{text}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["queries"][10]["query"]["victorialogs_ms"], 1997.0);
        assert_eq!(json["config"]["set"], "issue7");
        let queried = seen.lock().unwrap().clone();
        assert!(!queried
            .iter()
            .any(|(l, _)| l.starts_with("GET /loki/api/v1/query?")));

        // A second run with push off reuses the data and restarts the same way.
        let reuse = QueryBenchConfig {
            push: false,
            ..config
        };
        let report = run_query_bench(&reuse, Some(&mut server)).unwrap();
        assert!(report.ingest.is_none());
        assert!(matches!(report.data, DataSource::Reused { .. }));
        assert_eq!(report.needles, Some(needles));

        // Three cold runs: three restarts per query, their median reported.
        let before = server.restarts;
        let three = QueryBenchConfig {
            cold_runs: 3,
            ..reuse
        };
        let report = run_query_bench(&three, Some(&mut server)).unwrap();
        assert_eq!(server.restarts - before, 3 * 14);
        let colds: Vec<f64> = report
            .queries
            .iter()
            .filter_map(|q| match q.outcome {
                QueryOutcome::Answered { cold_ms, .. } => Some(cold_ms),
                _ => None,
            })
            .collect();
        assert!(!colds.is_empty() && colds.iter().all(|&c| c > 0.0));
        assert!(report
            .to_string()
            .contains("cold = median of 3 first runs, each after its own server restart"));
    }
}
