//! The ingest benchmark: pushes the reference workload to a running server with one
//! of its ingest protocols ([`Protocol`]; Loki protobuf + snappy by default) over
//! several concurrent connections, then flushes,
//! waits for merges to settle and reports throughput, server CPU, memory, write
//! amplification and disk use against the generator's floor.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;

use crate::generator::{Generator, GeneratorConfig, GeneratorStats, Shape, PODS_PER_NODE};
use crate::http::{self, Reply};
use crate::machine::{command_line, MachineInfo};
use crate::procstat::{self, ProcSample};
use crate::protocol::Protocol;

/// What to push and where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IngestBenchConfig {
    /// Base URL of the server, e.g. `http://127.0.0.1:3100`.
    pub url: String,
    /// Concurrent connections (threads); each acts as the collector of a share of the nodes.
    pub concurrency: usize,
    /// Lines per push request.
    pub batch_lines: usize,
    /// Lines to push in total.
    pub lines: u64,
    /// Streams (pods).
    pub streams: usize,
    /// Generator seed.
    pub seed: u64,
    /// Covered time span, seconds.
    pub span_secs: u64,
    /// End of the covered span, nanoseconds since the epoch; `None` means now.
    pub end_ns: Option<i64>,
    /// PID of the server process, for CPU, memory and I/O counters.
    pub pid: Option<u32>,
    /// The server's data directory, for disk usage.
    pub data_dir: Option<PathBuf>,
    /// Generate and encode every request before the timed push, so that the
    /// generator does not compete with the server for CPU while timing.
    pub pregenerate: bool,
    /// Upper bound on the wait for merges to settle, seconds.
    pub settle_timeout_secs: u64,
    /// Merges have settled when none runs and the part count is unchanged this long, seconds.
    pub settle_quiet_secs: u64,
    /// Tenant sent as `X-Scope-OrgID`, if any.
    pub tenant: Option<String>,
    /// The ingest protocol the requests use.
    pub protocol: Protocol,
    /// Workload shape of the generated lines.
    pub shape: Shape,
}

impl Default for IngestBenchConfig {
    fn default() -> Self {
        IngestBenchConfig {
            url: "http://127.0.0.1:3100".into(),
            concurrency: 4,
            batch_lines: 1_000,
            lines: 2_000_000,
            streams: 5_000,
            seed: 1,
            span_secs: 3_600,
            end_ns: None,
            pid: None,
            data_dir: None,
            pregenerate: true,
            settle_timeout_secs: 120,
            settle_quiet_secs: 3,
            tenant: None,
            protocol: Protocol::Loki,
            shape: Shape::Reference,
        }
    }
}

impl IngestBenchConfig {
    /// The generator config this benchmark pushes.
    pub fn generator_config(&self) -> GeneratorConfig {
        let end = self.end_ns.unwrap_or_else(now_ns);
        GeneratorConfig::ending_at(
            self.seed,
            self.streams,
            self.lines.max(1),
            end,
            self.span_secs.max(1) as i64 * 1_000_000_000,
        )
        .with_shape(self.shape)
    }
}

/// Nanoseconds since the epoch now, rounded down to the second.
pub fn now_ns() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    d.as_secs() as i64 * 1_000_000_000
}

/// How waiting for merges ended.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SettleOutcome {
    /// Time spent waiting, seconds.
    pub seconds: f64,
    /// True when no merge ran and the part count stayed the same for the quiet period.
    pub settled: bool,
    /// The last `parts` value reported by the server.
    pub parts: Option<serde_json::Value>,
    /// Why waiting stopped early, if it did.
    pub note: Option<String>,
}

/// Server resource usage, measured from `/proc/PID`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ServerUsage {
    /// CPU seconds used during the push.
    pub cpu_push_seconds: f64,
    /// CPU seconds from the start of the push to the end of the flush.
    pub cpu_through_flush_seconds: f64,
    /// CPU seconds from the start of the push until merges settled.
    pub cpu_total_seconds: f64,
    /// Push CPU seconds per million lines.
    pub cpu_push_seconds_per_million_lines: f64,
    /// Total CPU seconds (push, flush, merges) per million lines.
    pub cpu_total_seconds_per_million_lines: f64,
    /// Peak resident set size of the server (`VmHWM`), bytes.
    pub peak_rss_bytes: Option<u64>,
    /// Bytes the server wrote to storage from the start of the push until merges settled.
    pub write_bytes: Option<u64>,
    /// `write_bytes` per line pushed.
    pub write_bytes_per_line: Option<f64>,
}

/// Disk use of the data directory after flush and merges.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DiskUse {
    /// Allocated bytes before the push.
    pub bytes_before: u64,
    /// Allocated bytes after flush and merges.
    pub bytes_after: u64,
    /// Growth per line pushed.
    pub bytes_per_line: f64,
    /// `bytes_per_line` divided by the floor (1.0 would be a perfect store).
    pub ratio_to_floor: f64,
}

/// Everything the ingest benchmark measured.
#[derive(Clone, Debug, Serialize)]
pub struct IngestReport {
    /// The benchmark config.
    pub config: IngestBenchConfig,
    /// The machine.
    pub machine: MachineInfo,
    /// The command line that ran the benchmark.
    pub command_line: String,
    /// Totals of the generated workload.
    pub generator: GeneratorStats,
    /// Average line size (labels excluded), bytes.
    pub avg_line_bytes: f64,
    /// Average whole-object size (labels included), bytes.
    pub avg_object_bytes: f64,
    /// The floor: information content per line, bytes.
    pub floor_bytes_per_line: f64,
    /// Time to generate and encode all requests before the push, seconds (when pregenerated).
    pub pregenerate_seconds: Option<f64>,
    /// Requests sent.
    pub requests: u64,
    /// Requests that failed (non-2xx or transport error).
    pub failed_requests: u64,
    /// The first failure, if any.
    pub first_error: Option<String>,
    /// Lines in accepted requests.
    pub lines_pushed: u64,
    /// Compressed request bytes sent.
    pub body_bytes: u64,
    /// Wall time of the push, seconds.
    pub push_seconds: f64,
    /// Accepted lines per second of push wall time.
    pub lines_per_second: f64,
    /// Raw line bytes (labels excluded) accepted per second, MiB/s.
    pub raw_mib_per_second: f64,
    /// Status of `POST /flush`, or the transport error.
    pub flush: Result<u16, String>,
    /// Wall time of the flush request, seconds.
    pub flush_seconds: f64,
    /// How waiting for merges ended.
    pub settle: SettleOutcome,
    /// Server resource usage (when a PID was given).
    pub server: Option<ServerUsage>,
    /// Disk use (when a data directory was given).
    pub disk: Option<DiskUse>,
}

/// One encoded request.
struct Body {
    bytes: Vec<u8>,
    lines: usize,
}

/// Results of one push worker.
#[derive(Default)]
struct WorkerTotals {
    requests: u64,
    failed: u64,
    first_error: Option<String>,
    lines: u64,
    bytes: u64,
}

/// Generates `lines` lines and routes them to `workers` collectors (by node), calling
/// `emit(worker, body)` for each full batch; partial batches are emitted at the end.
fn produce(
    gen: &mut Generator,
    protocol: Protocol,
    lines: u64,
    batch_lines: usize,
    workers: usize,
    mut emit: impl FnMut(usize, Body) -> bool,
) {
    let mut pending: Vec<Vec<crate::GeneratedLine>> =
        vec![Vec::with_capacity(batch_lines); workers];
    let body = |gen: &Generator, batch: Vec<crate::GeneratedLine>| {
        let lines = batch.len();
        Body {
            bytes: protocol.encode(gen, batch),
            lines,
        }
    };
    for _ in 0..lines {
        let g = gen.next_line();
        let w = (g.stream / PODS_PER_NODE) % workers;
        pending[w].push(g);
        if pending[w].len() >= batch_lines {
            let batch = std::mem::replace(&mut pending[w], Vec::with_capacity(batch_lines));
            if !emit(w, body(gen, batch)) {
                return;
            }
        }
    }
    for (w, batch) in pending.into_iter().enumerate() {
        if !batch.is_empty() && !emit(w, body(gen, batch)) {
            return;
        }
    }
}

fn push_worker(
    url: String,
    protocol: Protocol,
    tenant: Option<String>,
    bodies: impl Iterator<Item = Body>,
) -> WorkerTotals {
    let agent = http::agent(Duration::from_secs(120));
    let mut t = WorkerTotals::default();
    let mut headers = vec![("Content-Type", protocol.content_type())];
    if let Some(tenant) = tenant.as_deref() {
        headers.push(("X-Scope-OrgID", tenant));
    }
    for body in bodies {
        t.requests += 1;
        t.bytes += body.bytes.len() as u64;
        let outcome = http::post(&agent, &url, &headers, &body.bytes);
        match outcome {
            Ok(r) if r.ok() && protocol.reply_has_item_errors(&r.body) => {
                t.failed += 1;
                t.first_error.get_or_insert_with(|| {
                    let mut text = r.body.trim().to_string();
                    text.truncate(text.floor_char_boundary(300));
                    format!("status {} with item errors: {text}", r.status)
                });
            }
            Ok(r) if r.ok() => t.lines += body.lines as u64,
            Ok(Reply { status, body }) => {
                t.failed += 1;
                t.first_error
                    .get_or_insert_with(|| format!("status {status}: {}", body.trim()));
            }
            Err(e) => {
                t.failed += 1;
                t.first_error.get_or_insert_with(|| format!("{e:#}"));
            }
        }
    }
    t
}

/// Polls `GET /admin/storage/stats` until no merge runs and `parts` stays unchanged
/// for `quiet`, or `timeout` passes.
pub fn wait_for_merges(
    agent: &ureq::Agent,
    base: &str,
    quiet: Duration,
    timeout: Duration,
) -> SettleOutcome {
    let url = format!("{base}/admin/storage/stats");
    let start = Instant::now();
    let mut out = SettleOutcome::default();
    let mut stable_since: Option<Instant> = None;
    loop {
        match http::get(agent, &url, &[], &[]) {
            Ok(r) if r.ok() => match serde_json::from_str::<serde_json::Value>(&r.body) {
                Ok(v) => {
                    let merges = v.get("merges_running").and_then(|m| m.as_u64());
                    let parts = v.get("parts").cloned();
                    if merges == Some(0) && parts.is_some() && parts == out.parts {
                        let since = *stable_since.get_or_insert_with(Instant::now);
                        if since.elapsed() >= quiet {
                            out.settled = true;
                            break;
                        }
                    } else {
                        stable_since = if merges == Some(0) {
                            Some(Instant::now())
                        } else {
                            None
                        };
                    }
                    if merges.is_none() {
                        out.note = Some("storage stats lack merges_running".into());
                        break;
                    }
                    out.parts = parts;
                }
                Err(e) => {
                    out.note = Some(format!("storage stats are not JSON: {e}"));
                    break;
                }
            },
            Ok(r) => {
                out.note = Some(format!("storage stats unavailable (status {})", r.status));
                break;
            }
            Err(e) => {
                out.note = Some(format!("storage stats unavailable: {e:#}"));
                break;
            }
        }
        if start.elapsed() >= timeout {
            out.note = Some(format!("merges did not settle within {timeout:?}"));
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    out.seconds = start.elapsed().as_secs_f64();
    out
}

fn per_line(v: f64, lines: u64) -> f64 {
    if lines == 0 {
        0.0
    } else {
        v / lines as f64
    }
}

/// Runs the ingest benchmark against the server at `config.url`.
pub fn run_ingest_bench(config: &IngestBenchConfig) -> anyhow::Result<IngestReport> {
    anyhow::ensure!(config.concurrency >= 1, "concurrency must be at least 1");
    anyhow::ensure!(config.batch_lines >= 1, "batch size must be at least 1");
    let base = config.url.trim_end_matches('/').to_string();
    let push_url = format!("{base}{}", config.protocol.path());
    let mut gen = Generator::new(config.generator_config())?;
    let workers = config.concurrency;
    let sample = |pid: Option<u32>| -> anyhow::Result<Option<ProcSample>> {
        pid.map(|p| procstat::sample(p).with_context(|| format!("reading /proc/{p}")))
            .transpose()
    };
    let disk_before = match &config.data_dir {
        Some(d) => {
            Some(procstat::disk_usage(d).with_context(|| format!("measuring {}", d.display()))?)
        }
        None => None,
    };

    // Pregenerated: every worker's requests in memory before the clock starts.
    let mut pregenerate_seconds = None;
    let mut prepared: Vec<Vec<Body>> = Vec::new();
    if config.pregenerate {
        let t0 = Instant::now();
        prepared = (0..workers).map(|_| Vec::new()).collect();
        produce(
            &mut gen,
            config.protocol,
            config.lines,
            config.batch_lines,
            workers,
            |w, b| {
                prepared[w].push(b);
                true
            },
        );
        pregenerate_seconds = Some(t0.elapsed().as_secs_f64());
    }

    let before = sample(config.pid)?;
    let t0 = Instant::now();
    let mut handles = Vec::new();
    if config.pregenerate {
        for bodies in prepared.drain(..) {
            let (url, tenant) = (push_url.clone(), config.tenant.clone());
            let protocol = config.protocol;
            handles.push(std::thread::spawn(move || {
                push_worker(url, protocol, tenant, bodies.into_iter())
            }));
        }
    } else {
        let mut senders = Vec::new();
        for _ in 0..workers {
            let (tx, rx) = mpsc::sync_channel::<Body>(4);
            let (url, tenant) = (push_url.clone(), config.tenant.clone());
            let protocol = config.protocol;
            handles.push(std::thread::spawn(move || {
                push_worker(url, protocol, tenant, rx.into_iter())
            }));
            senders.push(tx);
        }
        produce(
            &mut gen,
            config.protocol,
            config.lines,
            config.batch_lines,
            workers,
            |w, b| senders[w].send(b).is_ok(),
        );
    }
    let mut totals = WorkerTotals::default();
    for h in handles {
        let t = h
            .join()
            .map_err(|_| anyhow::anyhow!("push worker panicked"))?;
        totals.requests += t.requests;
        totals.failed += t.failed;
        totals.lines += t.lines;
        totals.bytes += t.bytes;
        if totals.first_error.is_none() {
            totals.first_error = t.first_error;
        }
    }
    let push_seconds = t0.elapsed().as_secs_f64();
    let after_push = sample(config.pid)?;

    let agent = http::agent(Duration::from_secs(600));
    let f0 = Instant::now();
    let mut headers = Vec::new();
    if let Some(t) = config.tenant.as_deref() {
        headers.push(("X-Scope-OrgID", t));
    }
    let flush = match http::post(&agent, &format!("{base}/flush"), &headers, b"") {
        Ok(r) => Ok(r.status),
        Err(e) => Err(format!("{e:#}")),
    };
    let flush_seconds = f0.elapsed().as_secs_f64();
    let after_flush = sample(config.pid)?;
    let settle = wait_for_merges(
        &agent,
        &base,
        Duration::from_secs(config.settle_quiet_secs),
        Duration::from_secs(config.settle_timeout_secs),
    );
    let after_settle = sample(config.pid)?;

    let stats = gen.stats().clone();
    let floor = stats.floor_bytes_per_line();
    let lines = totals.lines;
    let server = match (before, after_push, after_flush, after_settle) {
        (Some(b), Some(p), Some(f), Some(s)) => {
            let total = s.cpu_seconds - b.cpu_seconds;
            let push = p.cpu_seconds - b.cpu_seconds;
            let write_bytes = match (b.write_bytes, s.write_bytes) {
                (Some(x), Some(y)) => Some(y.saturating_sub(x)),
                _ => None,
            };
            Some(ServerUsage {
                cpu_push_seconds: push,
                cpu_through_flush_seconds: f.cpu_seconds - b.cpu_seconds,
                cpu_total_seconds: total,
                cpu_push_seconds_per_million_lines: per_line(push * 1e6, lines),
                cpu_total_seconds_per_million_lines: per_line(total * 1e6, lines),
                peak_rss_bytes: s.peak_rss_bytes,
                write_bytes,
                write_bytes_per_line: write_bytes.map(|w| per_line(w as f64, lines)),
            })
        }
        _ => None,
    };
    let disk = match (&config.data_dir, disk_before) {
        (Some(d), Some(before)) => {
            let after =
                procstat::disk_usage(d).with_context(|| format!("measuring {}", d.display()))?;
            let bpl = per_line(after.saturating_sub(before) as f64, lines);
            Some(DiskUse {
                bytes_before: before,
                bytes_after: after,
                bytes_per_line: bpl,
                ratio_to_floor: if floor > 0.0 { bpl / floor } else { 0.0 },
            })
        }
        _ => None,
    };
    let line_bytes_pushed = stats.avg_line_bytes() * lines as f64;
    Ok(IngestReport {
        config: config.clone(),
        machine: MachineInfo::detect(),
        command_line: command_line(),
        avg_line_bytes: stats.avg_line_bytes(),
        avg_object_bytes: stats.avg_object_bytes(),
        floor_bytes_per_line: floor,
        generator: stats,
        pregenerate_seconds,
        requests: totals.requests,
        failed_requests: totals.failed,
        first_error: totals.first_error,
        lines_pushed: lines,
        body_bytes: totals.bytes,
        push_seconds,
        lines_per_second: if push_seconds > 0.0 {
            lines as f64 / push_seconds
        } else {
            0.0
        },
        raw_mib_per_second: if push_seconds > 0.0 {
            line_bytes_pushed / push_seconds / (1u64 << 20) as f64
        } else {
            0.0
        },
        flush,
        flush_seconds,
        settle,
        server,
        disk,
    })
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

impl std::fmt::Display for IngestReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.config;
        writeln!(f, "## Ingest benchmark")?;
        writeln!(f)?;
        writeln!(f, "- machine: {}", self.machine)?;
        writeln!(f, "- command: `{}`", self.command_line)?;
        writeln!(
            f,
            "- protocol: {} (`POST {}`, {})",
            c.protocol,
            c.protocol.path(),
            c.protocol.body_format()
        )?;
        writeln!(
            f,
            "- workload: {} lines, {} streams, seed {}, shape {}, {} s span, batches of {}, {} connections{}",
            c.lines,
            c.streams,
            c.seed,
            c.shape.name(),
            c.span_secs,
            c.batch_lines,
            c.concurrency,
            if c.pregenerate {
                ", requests pregenerated"
            } else {
                ", generated while pushing"
            }
        )?;
        writeln!(f)?;
        writeln!(f, "| metric | value |")?;
        writeln!(f, "|---|---|")?;
        writeln!(f, "| lines pushed (accepted) | {} |", self.lines_pushed)?;
        writeln!(
            f,
            "| requests (failed) | {} ({}) |",
            self.requests, self.failed_requests
        )?;
        if let Some(e) = &self.first_error {
            writeln!(f, "| first failure | {} |", e.replace('|', "\\|"))?;
        }
        writeln!(f, "| push wall time | {:.2} s |", self.push_seconds)?;
        writeln!(
            f,
            "| throughput | {:.0} lines/s ({:.1} MiB/s raw) |",
            self.lines_per_second, self.raw_mib_per_second
        )?;
        writeln!(
            f,
            "| request bytes ({}) | {:.1} MiB ({:.0} B/line) |",
            c.protocol.body_format(),
            mib(self.body_bytes),
            per_line(self.body_bytes as f64, self.lines_pushed)
        )?;
        writeln!(
            f,
            "| avg line / object size | {:.0} B / {:.0} B |",
            self.avg_line_bytes, self.avg_object_bytes
        )?;
        writeln!(f, "| floor | {:.2} B/line |", self.floor_bytes_per_line)?;
        match &self.flush {
            Ok(s) => writeln!(f, "| flush | status {s}, {:.2} s |", self.flush_seconds)?,
            Err(e) => writeln!(f, "| flush | failed: {} |", e.replace('|', "\\|"))?,
        }
        writeln!(
            f,
            "| merges | {} after {:.1} s{} |",
            if self.settle.settled {
                "settled"
            } else {
                "not settled"
            },
            self.settle.seconds,
            self.settle
                .note
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        )?;
        match &self.server {
            Some(s) => {
                writeln!(
                    f,
                    "| server CPU: push | {:.2} s ({:.2} s per 1M lines) |",
                    s.cpu_push_seconds, s.cpu_push_seconds_per_million_lines
                )?;
                writeln!(
                    f,
                    "| server CPU: through flush | {:.2} s |",
                    s.cpu_through_flush_seconds
                )?;
                writeln!(
                    f,
                    "| server CPU: through merges | {:.2} s ({:.2} s per 1M lines) |",
                    s.cpu_total_seconds, s.cpu_total_seconds_per_million_lines
                )?;
                match s.peak_rss_bytes {
                    Some(b) => writeln!(f, "| server peak RSS | {:.1} MiB |", mib(b))?,
                    None => writeln!(f, "| server peak RSS | unavailable |")?,
                }
                match (s.write_bytes, s.write_bytes_per_line) {
                    (Some(w), Some(p)) => writeln!(
                        f,
                        "| written to disk | {:.1} MiB ({:.1} B/line) |",
                        mib(w),
                        p
                    )?,
                    _ => writeln!(f, "| written to disk | unavailable |")?,
                }
            }
            None => writeln!(f, "| server usage | no PID given |")?,
        }
        match &self.disk {
            Some(d) => {
                writeln!(
                    f,
                    "| disk after flush + merges | {:.1} MiB (+{:.1} MiB) |",
                    mib(d.bytes_after),
                    mib(d.bytes_after.saturating_sub(d.bytes_before))
                )?;
                writeln!(
                    f,
                    "| disk per line | {:.2} B ({:.2}x the floor) |",
                    d.bytes_per_line, d.ratio_to_floor
                )?;
            }
            None => writeln!(f, "| disk | no data directory given |")?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::testserver;

    #[test]
    fn pushes_everything_then_flushes_and_settles() {
        fn respond(line: &str) -> (u16, String) {
            if line.starts_with("GET /admin/storage/stats") {
                (200, r#"{"merges_running":0,"parts":3}"#.into())
            } else {
                (204, String::new())
            }
        }
        let (url, seen) = testserver::start(respond);
        let dir = tempfile::tempdir().unwrap();
        for pregenerate in [true, false] {
            let config = IngestBenchConfig {
                url: url.clone(),
                concurrency: 2,
                batch_lines: 100,
                lines: 1_050,
                streams: 120,
                pid: Some(std::process::id()),
                data_dir: Some(dir.path().to_path_buf()),
                pregenerate,
                settle_quiet_secs: 0,
                settle_timeout_secs: 5,
                ..IngestBenchConfig::default()
            };
            let report = run_ingest_bench(&config).unwrap();
            assert_eq!(report.lines_pushed, 1_050);
            assert_eq!(report.failed_requests, 0);
            assert!(report.requests >= 11);
            assert_eq!(report.flush, Ok(204));
            assert!(report.settle.settled, "{:?}", report.settle);
            assert!(report.server.is_some() && report.disk.is_some());
            assert!(report.floor_bytes_per_line > 0.0);
            let text = report.to_string();
            assert!(text.contains("lines/s"));
            let json = serde_json::to_value(&report).unwrap();
            assert_eq!(json["lines_pushed"], 1_050);
        }
        let seen = seen.lock().unwrap();
        assert!(seen
            .iter()
            .any(|(l, n)| l.starts_with("POST /loki/api/v1/push") && *n > 0));
        assert!(seen.iter().any(|(l, _)| l.starts_with("POST /flush")));
    }

    #[test]
    fn each_protocol_posts_to_its_endpoint() {
        fn respond(line: &str) -> (u16, String) {
            if line.starts_with("GET /admin/storage/stats") {
                (200, r#"{"merges_running":0,"parts":1}"#.into())
            } else {
                (204, String::new())
            }
        }
        let (url, seen) = testserver::start(respond);
        for protocol in Protocol::ALL {
            let config = IngestBenchConfig {
                url: url.clone(),
                concurrency: 1,
                batch_lines: 100,
                lines: 200,
                streams: 20,
                settle_quiet_secs: 0,
                settle_timeout_secs: 5,
                protocol,
                ..IngestBenchConfig::default()
            };
            let report = run_ingest_bench(&config).unwrap();
            assert_eq!(report.lines_pushed, 200, "{protocol}");
            assert!(report
                .to_string()
                .contains(&format!("protocol: {protocol}")));
            let path = protocol.path();
            let seen = seen.lock().unwrap();
            let posts = seen
                .iter()
                .filter(|(l, n)| l.starts_with(&format!("POST {path} ")) && *n > 0)
                .count();
            assert_eq!(posts, 2, "{protocol}: {path}");
        }
    }

    #[test]
    fn bulk_item_errors_count_as_failures() {
        fn respond(line: &str) -> (u16, String) {
            if line.starts_with("POST /_bulk") {
                (200, r#"{"took":0,"errors":true,"items":[]}"#.into())
            } else {
                (404, String::new())
            }
        }
        let (url, _) = testserver::start(respond);
        let config = IngestBenchConfig {
            url,
            concurrency: 1,
            batch_lines: 50,
            lines: 100,
            streams: 10,
            settle_timeout_secs: 0,
            protocol: Protocol::EsBulk,
            ..IngestBenchConfig::default()
        };
        let report = run_ingest_bench(&config).unwrap();
        assert_eq!(report.lines_pushed, 0);
        assert_eq!(report.failed_requests, 2);
        assert!(report.first_error.unwrap().contains("item errors"));
    }

    #[test]
    fn rejected_pushes_are_counted_not_fatal() {
        fn respond(line: &str) -> (u16, String) {
            if line.starts_with("POST /loki") {
                (400, "bad".into())
            } else {
                (404, String::new())
            }
        }
        let (url, _) = testserver::start(respond);
        let config = IngestBenchConfig {
            url,
            concurrency: 1,
            batch_lines: 50,
            lines: 100,
            streams: 10,
            ..IngestBenchConfig::default()
        };
        let report = run_ingest_bench(&config).unwrap();
        assert_eq!(report.lines_pushed, 0);
        assert_eq!(report.failed_requests, 2);
        assert_eq!(report.first_error.as_deref(), Some("status 400: bad"));
        assert!(!report.settle.settled);
        assert!(report.settle.note.unwrap().contains("404"));
    }
}
