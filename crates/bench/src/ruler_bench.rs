//! The ruler benchmark (issue 46): what evaluating a realistic rule set costs a
//! server that is also ingesting.
//!
//! The run: push the reference workload (by default 2M lines over the hour ending
//! now) into a server started with an empty `--rules-dir`, flush and let merges
//! settle; then keep pushing at the workload's own rate (lines / span) with
//! timestamps of *now*, as collectors would, and measure the server's CPU over a
//! window without rules (the baseline), write the rule files ([`rule_files`]),
//! reload them with SIGHUP, wait for every group's first evaluation and measure
//! the same window again. The ruler's cost is the difference, reported per
//! minute of wall time and per group evaluation, beside the ruler's own figures
//! from `/metrics` (iterations, missed iterations, failures, evaluation time).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;

use crate::generator::{Generator, GeneratorConfig, Shape};
use crate::http;
use crate::ingest_bench::{now_ns, run_ingest_bench, IngestBenchConfig};
use crate::machine::{command_line, MachineInfo};
use crate::procstat;
use crate::push::encode_push;

/// What to run.
#[derive(Clone, Debug, Serialize)]
pub struct RulerBenchConfig {
    /// Base URL of the server under test (started with `--rules-dir rules_dir`).
    pub url: String,
    /// Its PID (CPU from `/proc`, SIGHUP to reload rules).
    pub pid: u32,
    /// The server's `--rules-dir`; the benchmark writes `<dir>/<tenant>/*.yaml`.
    pub rules_dir: PathBuf,
    /// Tenant the rules belong to (the single-tenant server's `fake`).
    pub tenant: String,
    /// Lines pushed before measuring.
    pub lines: u64,
    /// Streams (pods).
    pub streams: usize,
    /// Generator seed.
    pub seed: u64,
    /// Span of the first push, seconds, ending now; the live push keeps the same rate.
    pub span_secs: u64,
    /// Rule groups.
    pub groups: usize,
    /// Rules per group.
    pub rules_per_group: usize,
    /// Every group's evaluation interval, seconds.
    pub interval_secs: u64,
    /// Length of each measured window (without and with rules), seconds.
    pub measure_secs: u64,
    /// Concurrent connections of the first push.
    pub concurrency: usize,
}

/// What one measured window saw.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Window {
    /// Wall seconds.
    pub seconds: f64,
    /// Server CPU seconds (user + system).
    pub cpu_seconds: f64,
    /// Lines pushed by the live pusher during the window.
    pub lines_pushed: u64,
    /// Group evaluations completed (`prometheus_rule_group_iterations_total`).
    pub group_iterations: f64,
    /// Missed group evaluations (`prometheus_rule_group_iterations_missed_total`).
    pub missed_iterations: f64,
    /// Failed rule evaluations (`prometheus_rule_evaluation_failures_total`).
    pub failures: f64,
    /// Wall seconds spent evaluating groups (`prometheus_rule_group_duration_seconds_sum`).
    pub evaluation_seconds: f64,
}

impl Window {
    /// CPU as a fraction of one core.
    pub fn cores(&self) -> f64 {
        self.cpu_seconds / self.seconds.max(1e-9)
    }
}

/// The benchmark's answer.
#[derive(Clone, Debug, Serialize)]
pub struct RulerReport {
    /// The command line that produced it.
    pub command: String,
    /// The machine.
    pub machine: MachineInfo,
    /// The run's settings.
    pub config: RulerBenchConfig,
    /// Lines per second pushed during the measured windows.
    pub live_rate: f64,
    /// Lines each rule's 5-minute range reads, on average, by selector kind.
    pub rules: Vec<String>,
    /// Seconds the first push took (with flush and merges).
    pub first_push_seconds: f64,
    /// The window without rules.
    pub baseline: Window,
    /// The window with the rules.
    pub with_rules: Window,
}

impl RulerReport {
    /// The ruler's CPU as a fraction of one core: with rules minus without.
    pub fn ruler_cores(&self) -> f64 {
        self.with_rules.cores() - self.baseline.cores()
    }

    /// The ruler's CPU seconds per group evaluation.
    pub fn cpu_per_group_evaluation(&self) -> f64 {
        let extra = self.with_rules.cpu_seconds - self.baseline.cores() * self.with_rules.seconds;
        extra / self.with_rules.group_iterations.max(1.0)
    }

    /// The ruler's CPU as a fraction of one core with every group evaluated
    /// once a minute: what was measured, scaled by interval / 60 s.
    pub fn cores_at_one_minute(&self) -> f64 {
        self.ruler_cores() * self.config.interval_secs as f64 / 60.0
    }
}

impl std::fmt::Display for RulerReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.config;
        writeln!(f, "# Ruler benchmark")?;
        writeln!(f)?;
        writeln!(f, "Command: `{}`", self.command)?;
        writeln!(f, "Machine: {}", self.machine)?;
        writeln!(
            f,
            "Data: {} lines over the {} s before the run ({} streams, seed {}), first push with \
             flush and merges {:.0} s; then live at {:.0} lines/s.",
            c.lines, c.span_secs, c.streams, c.seed, self.first_push_seconds, self.live_rate
        )?;
        writeln!(
            f,
            "Rules: {} groups × {} rules every {} s; each window {} s.",
            c.groups, c.rules_per_group, c.interval_secs, c.measure_secs
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "| window | CPU s | cores | lines pushed | group evaluations | missed | failures | evaluation wall s |"
        )?;
        writeln!(f, "|---|---|---|---|---|---|---|---|")?;
        for (name, w) in [
            ("without rules", &self.baseline),
            ("with rules", &self.with_rules),
        ] {
            writeln!(
                f,
                "| {name} | {:.2} | {:.3} | {} | {:.0} | {:.0} | {:.0} | {:.2} |",
                w.cpu_seconds,
                w.cores(),
                w.lines_pushed,
                w.group_iterations,
                w.missed_iterations,
                w.failures,
                w.evaluation_seconds
            )?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "The ruler: {:.3} of a core at this interval (with rules minus without); {:.1} ms CPU \
             per group evaluation completed in the window ({:.1} ms per rule); **{:.1} % of one \
             core** with every group evaluated once a minute (goal: under 10 %).",
            self.ruler_cores(),
            self.cpu_per_group_evaluation() * 1e3,
            self.cpu_per_group_evaluation() * 1e3 / c.rules_per_group.max(1) as f64,
            self.cores_at_one_minute() * 100.0
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "Rule kinds (per app group, then the cluster-wide group):"
        )?;
        for r in &self.rules {
            writeln!(f, "- `{r}`")?;
        }
        Ok(())
    }
}

/// The rule expressions written for one app, in order; `{a}` is the app.
const APP_RULES: [(&str, &str); 5] = [
    (
        "alert",
        "sum by (app) (count_over_time({app=\"{a}\"} | json | level=\"error\" [5m])) / sum by (app) (count_over_time({app=\"{a}\"}[5m])) > 0.05",
    ),
    (
        "alert",
        "sum by (app, namespace) (count_over_time({app=\"{a}\"} | json | status >= 500 [5m])) > 10",
    ),
    (
        "alert",
        "sum by (app) (count_over_time({app=\"{a}\"} |= \"connection timeout\" [5m])) > 0",
    ),
    (
        "record",
        "quantile_over_time(0.99, {app=\"{a}\"} | json | unwrap duration_ms [5m]) by (app)",
    ),
    (
        "record",
        "sum by (app, level) (count_over_time({app=\"{a}\"} | json [1m]))",
    ),
];

/// The cluster-wide rules of the last group.
const CLUSTER_RULES: [(&str, &str); 10] = [
    (
        "alert",
        "sum by (app) (count_over_time({app=~\".+\"} | json | level=\"error\" [5m])) > 50",
    ),
    (
        "alert",
        "sum by (namespace) (count_over_time({app=~\".+\"} | json | status >= 500 [5m])) > 100",
    ),
    (
        "alert",
        "sum(count_over_time({app=~\".+\"} |= \"panic\" [5m])) > 0",
    ),
    (
        "alert",
        "sum by (namespace) (rate({app=~\".+\"} |= \"connection timeout\" [5m])) > 1",
    ),
    (
        "record",
        "sum by (namespace, level) (count_over_time({app=~\".+\"} | json [1m]))",
    ),
    (
        "record",
        "quantile_over_time(0.99, {app=~\".+\"} | json | unwrap duration_ms [5m]) by (namespace)",
    ),
    (
        "record",
        "sum by (namespace) (sum_over_time({app=~\".+\"} | json | unwrap bytes_sent [1m]))",
    ),
    (
        "record",
        "sum by (region) (count_over_time({app=~\".+\"} | json | status >= 400 [5m]))",
    ),
    (
        "record",
        "sum by (app) (bytes_over_time({app=~\".+\"}[1m]))",
    ),
    (
        "record",
        "sum by (namespace) (count_over_time({app=~\".+\"}[1m]))",
    ),
];

/// The rule files for `apps` (the workload's apps, busiest first): groups
/// `0..groups-1` each take `rules_per_group / 5` apps with the five
/// [`APP_RULES`] each; the last group holds [`CLUSTER_RULES`] (cut or repeated
/// to `rules_per_group`). Returns (file name, YAML) pairs, one group per file.
pub fn rule_files(
    apps: &[&str],
    groups: usize,
    rules_per_group: usize,
    interval_secs: u64,
) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut next_app = 0usize;
    let mut rule_no = 0usize;
    for g in 0..groups {
        let mut yaml = format!(
            "groups:\n  - name: bench-{g:02}\n    interval: {interval_secs}s\n    rules:\n"
        );
        let cluster = g + 1 == groups && groups > 1;
        for r in 0..rules_per_group {
            let (kind, expr) = if cluster {
                let (k, e) = CLUSTER_RULES[r % CLUSTER_RULES.len()];
                (k, e.to_string())
            } else {
                if r % APP_RULES.len() == 0 && r > 0 {
                    next_app += 1;
                }
                let app = apps[next_app % apps.len().max(1)];
                let (k, e) = APP_RULES[r % APP_RULES.len()];
                (k, e.replace("{a}", app))
            };
            rule_no += 1;
            let expr = expr.replace('\'', "''");
            if kind == "alert" {
                yaml.push_str(&format!(
                    "      - alert: Bench{rule_no}\n        expr: '{expr}'\n        for: 2m\n        \
                     labels: {{severity: page}}\n        annotations: {{summary: '{{{{ $labels.app }}}} at {{{{ $value | humanize }}}}'}}\n"
                ));
            } else {
                yaml.push_str(&format!(
                    "      - record: bench:rule{rule_no}\n        expr: '{expr}'\n"
                ));
            }
        }
        if !cluster {
            next_app += 1;
        }
        files.push((format!("bench-{g:02}.yaml"), yaml));
    }
    files
}

/// The sum of every sample of metric `name` in a Prometheus text exposition.
pub fn metric_sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Counters read from `/metrics` at one moment.
#[derive(Clone, Copy, Debug, Default)]
struct RulerCounters {
    iterations: f64,
    missed: f64,
    failures: f64,
    evaluation_seconds: f64,
    groups_evaluated: usize,
}

fn ruler_counters(agent: &ureq::Agent, base: &str) -> anyhow::Result<RulerCounters> {
    let text = http::get(agent, &format!("{base}/metrics"), &[], &[])?.body;
    let groups_evaluated = text
        .lines()
        .filter(|l| l.starts_with("prometheus_rule_group_iterations_total{"))
        .filter(|l| {
            l.rsplit(' ')
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .is_some_and(|v| v >= 1.0)
        })
        .count();
    Ok(RulerCounters {
        iterations: metric_sum(&text, "prometheus_rule_group_iterations_total"),
        missed: metric_sum(&text, "prometheus_rule_group_iterations_missed_total"),
        failures: metric_sum(&text, "prometheus_rule_evaluation_failures_total"),
        evaluation_seconds: metric_sum(&text, "prometheus_rule_group_duration_seconds_sum"),
        groups_evaluated,
    })
}

/// Pushes the workload's lines at `rate` lines/s with timestamps of now, once a
/// second, until `stop`; counts the lines sent.
fn live_push(
    url: String,
    gen_config: GeneratorConfig,
    rate: f64,
    stop: Arc<AtomicBool>,
    pushed: Arc<AtomicU64>,
) -> anyhow::Result<()> {
    let mut gen = Generator::new(gen_config)?;
    let agent = http::agent(Duration::from_secs(60));
    let headers = [("Content-Type", "application/x-protobuf")];
    let start = Instant::now();
    let mut sent = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let due = (start.elapsed().as_secs_f64() * rate) as u64;
        if due > sent {
            let now = now_ns();
            let mut batch = gen.fill_batch((due - sent) as usize);
            // The generator spreads lines over its own span; a live collector
            // sends what happened in the last second.
            let n = batch.len().max(1) as i64;
            for (i, l) in batch.iter_mut().enumerate() {
                l.ts = now - 1_000_000_000 + (i as i64 * 1_000_000_000) / n;
            }
            let body = encode_push(&gen, &batch);
            let r = http::post(&agent, &url, &headers, &body)?;
            anyhow::ensure!(r.ok(), "live push answered {}: {}", r.status, r.body);
            sent = due;
            pushed.store(sent, Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

fn measure(
    agent: &ureq::Agent,
    base: &str,
    pid: u32,
    seconds: u64,
    pushed: &AtomicU64,
) -> anyhow::Result<Window> {
    let c0 = ruler_counters(agent, base)?;
    let p0 = pushed.load(Ordering::Relaxed);
    let s0 = procstat::sample(pid)?;
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    let s1 = procstat::sample(pid)?;
    let wall = t0.elapsed().as_secs_f64();
    let c1 = ruler_counters(agent, base)?;
    Ok(Window {
        seconds: wall,
        cpu_seconds: s1.cpu_seconds - s0.cpu_seconds,
        lines_pushed: pushed.load(Ordering::Relaxed) - p0,
        group_iterations: c1.iterations - c0.iterations,
        missed_iterations: c1.missed - c0.missed,
        failures: c1.failures - c0.failures,
        evaluation_seconds: c1.evaluation_seconds - c0.evaluation_seconds,
    })
}

fn write_rules(dir: &Path, files: &[(String, String)]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, yaml) in files {
        let p = dir.join(name);
        std::fs::write(&p, yaml).with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}

/// Runs the ruler benchmark against the server at `config.url`.
pub fn run_ruler_bench(config: &RulerBenchConfig) -> anyhow::Result<RulerReport> {
    anyhow::ensure!(
        config.groups >= 1 && config.rules_per_group >= 1,
        "no rules"
    );
    let base = config.url.trim_end_matches('/').to_string();
    let agent = http::agent(Duration::from_secs(120));
    let end = now_ns();
    let t0 = Instant::now();
    let ingest = IngestBenchConfig {
        url: base.clone(),
        concurrency: config.concurrency,
        lines: config.lines,
        streams: config.streams,
        seed: config.seed,
        span_secs: config.span_secs,
        end_ns: Some(end),
        pid: Some(config.pid),
        shape: Shape::Reference,
        pregenerate: false,
        ..IngestBenchConfig::default()
    };
    let pushed_first = run_ingest_bench(&ingest)?;
    anyhow::ensure!(
        pushed_first.lines_pushed == config.lines,
        "first push stored {} of {} lines",
        pushed_first.lines_pushed,
        config.lines
    );
    let first_push_seconds = t0.elapsed().as_secs_f64();

    // The apps, busiest first (the rules cover the apps with the most pods).
    let gen = Generator::new(ingest.generator_config())?;
    let mut pods: BTreeMap<&str, usize> = BTreeMap::new();
    for i in 0..gen.stream_count() {
        *pods.entry(gen.stream_app(i)).or_default() += 1;
    }
    let mut apps: Vec<(&str, usize)> = pods.into_iter().collect();
    apps.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let apps: Vec<&str> = apps.into_iter().map(|(a, _)| a).collect();
    let files = rule_files(
        &apps,
        config.groups,
        config.rules_per_group,
        config.interval_secs,
    );

    // Live push at the workload's rate, on through both windows.
    let rate = config.lines as f64 / config.span_secs.max(1) as f64;
    let live_config = GeneratorConfig::ending_at(
        config.seed + 1,
        config.streams,
        (rate * (4 * config.measure_secs + 600) as f64) as u64 + 1,
        end,
        config.span_secs.max(1) as i64 * 1_000_000_000,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let pushed = Arc::new(AtomicU64::new(0));
    let pusher = {
        let (url, stop, pushed) = (
            format!("{base}/loki/api/v1/push"),
            stop.clone(),
            pushed.clone(),
        );
        std::thread::spawn(move || live_push(url, live_config, rate, stop, pushed))
    };
    let result = (|| -> anyhow::Result<(Window, Window)> {
        std::thread::sleep(Duration::from_secs(5));
        let baseline = measure(&agent, &base, config.pid, config.measure_secs, &pushed)?;
        write_rules(&config.rules_dir.join(&config.tenant), &files)?;
        // SAFETY: kill(2) with a PID we started and a valid signal number.
        let rc = unsafe { libc::kill(config.pid as libc::pid_t, libc::SIGHUP) };
        anyhow::ensure!(rc == 0, "SIGHUP to {} failed", config.pid);
        let deadline = Instant::now() + Duration::from_secs(config.interval_secs * 3 + 60);
        loop {
            let c = ruler_counters(&agent, &base)?;
            if c.groups_evaluated >= config.groups {
                break;
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "only {} of {} groups evaluated after SIGHUP",
                c.groups_evaluated,
                config.groups
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        let with_rules = measure(&agent, &base, config.pid, config.measure_secs, &pushed)?;
        Ok((baseline, with_rules))
    })();
    stop.store(true, Ordering::Relaxed);
    let pushed_ok = pusher
        .join()
        .map_err(|_| anyhow::anyhow!("live pusher panicked"))?;
    let (baseline, with_rules) = result?;
    pushed_ok?;
    let kinds: BTreeSet<String> = APP_RULES
        .iter()
        .map(|(_, e)| e.replace("{a}", "APP"))
        .chain(CLUSTER_RULES.iter().map(|(_, e)| e.to_string()))
        .collect();
    Ok(RulerReport {
        command: command_line(),
        machine: MachineInfo::detect(),
        config: config.clone(),
        live_rate: rate,
        rules: kinds.into_iter().collect(),
        first_push_seconds,
        baseline,
        with_rules,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_files_cover_the_asked_groups_and_rules() {
        let files = rule_files(&["a", "b", "c", "d", "e"], 4, 10, 60);
        assert_eq!(files.len(), 4);
        let rules: usize = files.iter().map(|(_, y)| y.matches("expr: ").count()).sum();
        assert_eq!(rules, 40);
        // Two apps per app group, one after the other; the last group is cluster-wide.
        assert!(files[0].1.contains("{app=\"a\"}") && files[0].1.contains("{app=\"b\"}"));
        assert!(files[1].1.contains("{app=\"c\"}") && files[1].1.contains("{app=\"d\"}"));
        assert!(files[3].1.contains("{app=~\".+\"}"));
        assert!(!files[3].1.contains("{app=\"a\"}"));
    }

    #[test]
    fn metric_sum_adds_every_series_of_one_name_only() {
        let text = "# HELP x\nfoo_total{g=\"a\"} 2\nfoo_total{g=\"b\"} 3.5\nfoo_total_other 9\nfoo_total 1\n";
        assert_eq!(metric_sum(text, "foo_total"), 6.5);
    }
}
